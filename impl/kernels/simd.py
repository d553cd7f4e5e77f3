"""float32 lanes as one numba value (LLVM's <8 x float> or <16 x float>, one AVX or AVX-512 register), for the products'
register tiles (regtiles._tile4, regtiles._tile16). numba's loop vectoriser only vectorises an innermost loop, and a
tile of running sums kept in registers across the loop over k has its vector loop (over columns) outside that loop;
written with scalars, the tile was not vectorised at all. These intrinsics name the vector operations instead.

Each operation is one IEEE float32 operation per lane with no fast-math flags: `madd8(s, x, y)` is s + x * y with
the product rounded before the addition (LLVM contracts an fmul and an fadd into a fused multiply-add only when
their flags allow it), so a lane computes exactly what the scalar expression s + x * y computes in numba. Where the
CPU has narrower vectors (SSE's four lanes, NEON's, AVX2's eight for the sixteen) LLVM splits each operation, lane by
lane: the same bits.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir  # type: ignore[import-untyped]
from numba import types
from numba.core import cgutils
from numba.core.extending import intrinsic, models, register_model


class F32xN(types.Type):
    """numba's type of an <N x float> value."""

    def __init__(self, lanes: int) -> None:
        self.lanes = lanes
        super().__init__(name=f"F32x{lanes}")


@register_model(F32xN)
class _F32xNModel(models.PrimitiveModel):
    def __init__(self, dmm: Any, fe_type: Any) -> None:
        super().__init__(dmm, fe_type, ir.VectorType(ir.FloatType(), fe_type.lanes))  # type: ignore[no-untyped-call]


def _ops(lanes: int) -> tuple[Any, Any, Any, Any, Any]:
    """load, store, splat, zero and madd on <lanes x float> values (one numba type per lane count)."""
    vt = ir.VectorType(ir.FloatType(), lanes)
    ty = F32xN(lanes)

    def pointer(context: Any, builder: Any, aty: Any, arr: Any, idx: list[tuple[Any, Any]]) -> Any:
        """A pointer to arr[i, j] (indices of any integer type, no wraparound, no bounds check) as a pointer to
        <lanes x float>: the lanes numbers from arr[i, j] along the row."""
        ary = context.make_array(aty)(context, builder, arr)
        ix = [context.cast(builder, v, t, types.intp) for v, t in idx]
        ptr = cgutils.get_item_pointer(context, builder, aty, ary, ix, wraparound=False)  # type: ignore
        return builder.bitcast(ptr, vt.as_pointer())

    def load_t(typingctx: Any, arr: Any, i: Any, j: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            p = pointer(context, builder, signature.args[0], args[0], [(args[1], i), (args[2], j)])
            return builder.load(p, align=4)
        return ty(arr, i, j), codegen

    def store_t(typingctx: Any, arr: Any, i: Any, j: Any, v: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            p = pointer(context, builder, signature.args[0], args[0], [(args[1], i), (args[2], j)])
            builder.store(args[3], p, align=4)
            return context.get_dummy_value()
        return types.none(arr, i, j, v), codegen

    def splat_t(typingctx: Any, x: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            v = builder.insert_element(ir.Constant(vt, ir.Undefined), args[0], ir.Constant(ir.IntType(32), 0))
            return builder.shuffle_vector(v, ir.Constant(vt, ir.Undefined),
                                          ir.Constant(ir.VectorType(ir.IntType(32), lanes), [0] * lanes))
        return ty(types.float32), codegen

    def zero_t(typingctx: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            return ir.Constant(vt, [0.0] * lanes)   # +0.0 in every lane
        return ty(), codegen

    def madd_t(typingctx: Any, s: Any, x: Any, y: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            return builder.fadd(args[0], builder.fmul(args[1], args[2]))   # two roundings: no flags, no contraction
        return ty(ty, ty, ty), codegen

    return intrinsic(load_t), intrinsic(store_t), intrinsic(splat_t), intrinsic(zero_t), intrinsic(madd_t)


# arr[i, j:j + lanes] of a 2-D float32 array (the caller keeps j + lanes <= columns); arr[i, j:j + lanes] = v; a
# float32 in every lane; +0.0 in every lane; s + x * y lane by lane, the product rounded to float32, then the sum
load8, store8, splat8, zero8, madd8 = _ops(8)
load16, store16, splat16, zero16, madd16 = _ops(16)
