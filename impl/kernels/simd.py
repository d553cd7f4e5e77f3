"""Eight float32 lanes as one numba value (LLVM's <8 x float>, one AVX register), for the products' register tiles
(matmul._tile4). numba's loop vectoriser only vectorises an innermost loop, and a tile of running sums kept in
registers across the loop over k has its vector loop (over columns) outside that loop; written with scalars, the
tile was not vectorised at all. These intrinsics name the vector operations instead.

Each operation is one IEEE float32 operation per lane with no fast-math flags: `madd8(s, x, y)` is s + x * y with
the product rounded before the addition (LLVM contracts an fmul and an fadd into a fused multiply-add only when
their flags allow it), so a lane computes exactly what the scalar expression s + x * y computes in numba. Where the
CPU has narrower vectors (SSE's four lanes, NEON's) LLVM splits each operation into two, lane by lane: the same bits.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir  # type: ignore[import-untyped]
from numba import types
from numba.core import cgutils
from numba.core.extending import intrinsic, models, register_model

LANES = 8
_VT = ir.VectorType(ir.FloatType(), LANES)


class F32x8(types.Type):
    """numba's type of an <8 x float> value."""

    def __init__(self) -> None:
        super().__init__(name="F32x8")


f32x8 = F32x8()


@register_model(F32x8)
class _F32x8Model(models.PrimitiveModel):
    def __init__(self, dmm: Any, fe_type: Any) -> None:
        super().__init__(dmm, fe_type, _VT)  # type: ignore[no-untyped-call]


def _lane_pointer(context: Any, builder: Any, aty: Any, arr: Any, idx: list[tuple[Any, Any]]) -> Any:
    """A pointer to arr[i, j] (indices of any integer type, no wraparound, no bounds check) as a pointer to <8 x
    float>: the eight numbers from arr[i, j] along the row."""
    ary = context.make_array(aty)(context, builder, arr)
    ix = [context.cast(builder, v, t, types.intp) for v, t in idx]
    ptr = cgutils.get_item_pointer(context, builder, aty, ary, ix, wraparound=False)  # type: ignore[no-untyped-call]
    return builder.bitcast(ptr, _VT.as_pointer())


def _load8_t(typingctx: Any, arr: Any, i: Any, j: Any) -> Any:
    sig = f32x8(arr, i, j)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        p = _lane_pointer(context, builder, signature.args[0], args[0], [(args[1], i), (args[2], j)])
        return builder.load(p, align=4)
    return sig, codegen


def _store8_t(typingctx: Any, arr: Any, i: Any, j: Any, v: Any) -> Any:
    sig = types.none(arr, i, j, v)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        p = _lane_pointer(context, builder, signature.args[0], args[0], [(args[1], i), (args[2], j)])
        builder.store(args[3], p, align=4)
        return context.get_dummy_value()
    return sig, codegen


def _splat8_t(typingctx: Any, x: Any) -> Any:
    sig = f32x8(types.float32)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        v = builder.insert_element(ir.Constant(_VT, ir.Undefined), args[0], ir.Constant(ir.IntType(32), 0))
        return builder.shuffle_vector(v, ir.Constant(_VT, ir.Undefined),
                                      ir.Constant(ir.VectorType(ir.IntType(32), LANES), [0] * LANES))
    return sig, codegen


def _zero8_t(typingctx: Any) -> Any:
    sig = f32x8()

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return ir.Constant(_VT, [0.0] * LANES)   # +0.0 in every lane
    return sig, codegen


def _madd8_t(typingctx: Any, s: Any, x: Any, y: Any) -> Any:
    sig = f32x8(f32x8, f32x8, f32x8)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.fadd(args[0], builder.fmul(args[1], args[2]))   # two roundings: no flags, no contraction
    return sig, codegen


load8: Any = intrinsic(_load8_t)     # arr[i, j:j + 8] of a 2-D float32 array (the caller keeps j + 8 <= columns)
store8: Any = intrinsic(_store8_t)   # arr[i, j:j + 8] = v
splat8: Any = intrinsic(_splat8_t)   # a float32 in every lane
zero8: Any = intrinsic(_zero8_t)     # +0.0 in every lane
madd8: Any = intrinsic(_madd8_t)     # s + x * y lane by lane, the product rounded to float32, then the sum
