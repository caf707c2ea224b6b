//! ptxas's slow-path subroutines: the rarely taken part of an IEEE-rounded recipe
//! (`div.rn.f32`, `sqrt.rn.f32`, `rcp.rn.f64`, `rsqrt.approx.f64`; `isel/fdiv.rs`) is not inline
//! in the kernel but a subroutine of it, reached with `CALL.REL.NOINC` from the fast path's
//! fall-through and returning with `RET.REL.NODEC Rx 0x0`; `rcp.{rz,rm,rp}.f64` is such a
//! subroutine as a whole (`isel/drcp.rs`). What ptxas 13.1 does (`tests/tests/isel_arith.rs`,
//! `ieee_slow_paths_are_subroutines` and `f64_slow_paths_are_subroutines` compile such kernels with
//! ptxas and assert it):
//!
//! | Fact | Evidence (ptxas -arch sm_90a) |
//! |---|---|
//! | The fast path ends with `@!P0 BRA join`; the fall-through moves the operands into place, puts the return address in a register (`MOV R4, 0xd0`) and calls; the result is moved out after the `CALL` | one `div.rn.f32` of two parameters (`CALL.REL.NOINC 0x110`, result in R3, `IMAD.MOV.U32 R5, RZ, RZ, R3`) |
//! | One subroutine per kind and kernel, shared by every call site of the kernel (the convention — operand, result and return-address registers — is chosen per kernel: R3/R4 → R3, return address R6 in one kernel, R4 in another) | three `div.rn.f32` and one `sqrt.rn.f32` in a kernel: two subroutines, three calls to the division's |
//! | The subroutines follow the kernel's code sorted by name, whatever the order of use | a kernel using div, sqrt, rcp.rn.f64 in that order: `dblrcp` at 0x2e0, `sqrt` at 0x560, `div` at 0x6c0; one using sqrt.rn.ftz, rcp.{rz,rm,rp}.f64, rsqrt.approx.f64: `drsqrt`, `rcp_rd`, `rcp_ru`, `rcp_rz`, `sqrt_rn_ftz` |
//! | Each is a weak FUNC symbol (info 0x22, among the local symbols) `$__internal_<n>_$<name>` (n counts over the module, in the cubin's processing order: reverse PTX order) with its own `EIATTR_FRAME_SIZE` 0; the kernel gets `EIATTR_CRS_STACK_SIZE 0` | two kernels: `kb`'s three are `__internal_0..2`, then `ka`'s `__internal_3..4` |
//! | Names: `__cuda_sm3x_div_rn_{noftz,ftz}_f32_slowpath`, `__cuda_sm20_sqrt_rn_{,ftz_}f32_slowpath`, `__cuda_sm20_dblrcp_rn_slowpath_v3` (rcp.rn.f64), `__cuda_sm20_drsqrt_f64_slowpath_v2` (rsqrt.approx.f64), `__cuda_sm20_rcp_{rd,ru,rz}_f64` (the whole of rcp.{rm,rp,rz}.f64) | the kernels above |
//!
//! ptxc compiles each slow path once, as a subroutine of the module with a fixed convention
//! (`isel/call.rs`, `call_slow_path`: operands and result from R4, the return address in
//! R2:R3); its body is the PTX instruction itself, selected in a function whose name says to
//! emit only the slow part ([`kind`]). It is allocated before its callers and saves nothing; a
//! call to it overwrites exactly the registers it writes (`passes/regalloc`,
//! `call_clobber_set`). ptxas instead allocates each kernel's copy around the kernel's live
//! values (`docs/passes/lowering.md`, "Slow paths as subroutines", has the registers each
//! writes and each kernel keeps). `lower/link.rs` then appends it to every kernel that calls
//! it, as it does with the module's own subroutines, and `emit/build.rs` names its symbol
//! ([`symbol_name`]).

use crate::frontend::ast;

/// One of ptxas's slow paths: its name (without the `$__internal_<n>_$` prefix) and a PTX
/// function whose body is the instruction it completes.
pub struct SlowPath {
    pub name: &'static str,
    params: &'static str,
    body: &'static str,
}

/// The slow paths ptxc emits as subroutines, in ptxas's placement order (by name: every
/// kernel of the evidence has them sorted so).
pub const SLOW_PATHS: &[SlowPath] = &[
    SlowPath {
        name: "__cuda_sm20_dblrcp_rn_slowpath_v3",
        params: "(.reg .f64 %r) __cuda_sm20_dblrcp_rn_slowpath_v3(.reg .f64 %a)",
        body: "rcp.rn.f64 %r, %a;",
    },
    SlowPath {
        name: "__cuda_sm20_drsqrt_f64_slowpath_v2",
        params: "(.reg .f64 %r) __cuda_sm20_drsqrt_f64_slowpath_v2(.reg .f64 %a)",
        body: "rsqrt.approx.f64 %r, %a;",
    },
    SlowPath {
        name: "__cuda_sm20_rcp_rd_f64",
        params: "(.reg .f64 %r) __cuda_sm20_rcp_rd_f64(.reg .f64 %a)",
        body: "rcp.rm.f64 %r, %a;",
    },
    SlowPath {
        name: "__cuda_sm20_rcp_ru_f64",
        params: "(.reg .f64 %r) __cuda_sm20_rcp_ru_f64(.reg .f64 %a)",
        body: "rcp.rp.f64 %r, %a;",
    },
    SlowPath {
        name: "__cuda_sm20_rcp_rz_f64",
        params: "(.reg .f64 %r) __cuda_sm20_rcp_rz_f64(.reg .f64 %a)",
        body: "rcp.rz.f64 %r, %a;",
    },
    SlowPath {
        name: "__cuda_sm20_sqrt_rn_f32_slowpath",
        params: "(.reg .f32 %r) __cuda_sm20_sqrt_rn_f32_slowpath(.reg .f32 %a)",
        body: "sqrt.rn.f32 %r, %a;",
    },
    SlowPath {
        name: "__cuda_sm20_sqrt_rn_ftz_f32_slowpath",
        params: "(.reg .f32 %r) __cuda_sm20_sqrt_rn_ftz_f32_slowpath(.reg .f32 %a)",
        body: "sqrt.rn.ftz.f32 %r, %a;",
    },
    SlowPath {
        name: "__cuda_sm3x_div_rn_ftz_f32_slowpath",
        params: "(.reg .f32 %q) __cuda_sm3x_div_rn_ftz_f32_slowpath(.reg .f32 %a, .reg .f32 %b)",
        body: "div.rn.ftz.f32 %q, %a, %b;",
    },
    SlowPath {
        name: "__cuda_sm3x_div_rn_noftz_f32_slowpath",
        params: "(.reg .f32 %q) __cuda_sm3x_div_rn_noftz_f32_slowpath(.reg .f32 %a, .reg .f32 %b)",
        body: "div.rn.f32 %q, %a, %b;",
    },
];

/// The position in [`SLOW_PATHS`] of the slow path named `name`, if it is one.
pub fn kind(name: &str) -> Option<usize> {
    SLOW_PATHS.iter().position(|s| s.name == name)
}

/// The PTX function of a slow path: a `.func` whose body is the instruction itself (selected
/// as its slow part only, since the function has the slow path's name).
pub fn function(s: &SlowPath) -> Result<ast::Function, String> {
    let src = format!(
        ".version 8.0\n.target sm_90a\n.address_size 64\n.func {}\n{{\n  {}\n  ret;\n}}\n",
        s.params, s.body
    );
    let m = crate::frontend::parse(&src).map_err(|d| d.message)?;
    m.items
        .into_iter()
        .find_map(|it| match it {
            ast::Item::Function(f) => Some(*f),
            _ => None,
        })
        .ok_or_else(|| format!("no function in the slow path `{}`", s.name))
}

/// The symbol of a slow path linked into a kernel, numbered as ptxas numbers them: `n` counts
/// the slow paths of the module in the cubin's processing order.
pub fn symbol_name(name: &str, n: usize) -> String {
    format!("$__internal_{n}_${name}")
}
