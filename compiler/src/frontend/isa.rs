//! The PTX instruction table: which modifiers and operands each opcode takes, as data.
//!
//! Each line of [`TABLE`] is one *form* of an opcode:
//!
//! ```text
//! opcode   modifier-groups ... : operands ... [@smNN 'feature'] [!nonsync]
//! ```
//!
//! Modifier groups:
//! * `{.a .b}` optional, at most one of them; `<.a .b>` required, exactly one of them.
//! * `T<u32 s32>` / `T{...}`: the instruction type (required / optional). Further type slots are
//!   `U` and `W` and `X`, matched in the order the types are written (`cvt.f32.u32`: T=f32, U=u32).
//! * `V{.v2 .v4}`: the vector width of the data operand.
//!
//! Operands (positional):
//! * `d:TY` destination register, `d~:TY` one that may be wider than TY (ld/cvt/mov of narrow
//!   types), `d|:pred` a predicate destination that may be a pair `p|q`.
//! * `a:TY` a source register or immediate, `a~:TY` one whose register may be wider (cvt),
//!   `r:TY` a source register only, `i:TY` an immediate.
//! * `p` a source predicate (`!p` allowed, `1`/`0` not), `m` a memory address `[...]`,
//!   `l` a branch target label, `f` a function name or register holding one, `V` the data operand
//!   of ld/st (a vector `{...}` when a `.vN` is given), `_` any operand (not checked).
//! * `?x` an optional trailing operand, `*` any number of further operands.
//!
//! TY is `T`, `U`, `W`, `X` (the type slots), `2T` (twice T's width), or a type name (`u32`,
//! `b64`, `pred`).
//!
//! `@sm90 'mapa'` gates the form: below that target ptxas says
//! "Feature 'mapa' requires .target sm_90 or higher". Forms are tried in order; the first whose
//! type slots fit the written types decides.

use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::OnceLock;

/// Every PTX data type name (without the dot), for classifying modifiers.
pub const TYPE_NAMES: &[&str] = &[
    "b8", "b16", "b32", "b64", "b128", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "f16",
    "f16x2", "bf16", "bf16x2", "f32", "f64", "tf32", "e4m3", "e5m2", "e4m3x2", "e5m2x2", "e2m3x2",
    "e3m2x2", "e2m1x2", "ue8m0x2", "pred", "b1024", "s4", "u4", "b1",
];

/// Named type sets used in the table (`T<$int>`).
const TYPE_SETS: &[(&str, &str)] = &[
    ("$int", "u16 u32 u64 s16 s32 s64"),
    ("$int8", "u8 u16 u32 u64 s8 s16 s32 s64"),
    ("$bit", "b16 b32 b64"),
    ("$intbit", "u16 u32 u64 s16 s32 s64 b16 b32 b64"),
    ("$half", "f16 f16x2 bf16 bf16x2"),
    (
        "$ldst",
        "b8 b16 b32 b64 b128 u8 u16 u32 u64 s8 s16 s32 s64 f16 f16x2 bf16 bf16x2 f32 f64",
    ),
    (
        "$mov",
        "pred b16 b32 b64 b128 u16 u32 u64 s16 s32 s64 f16 f16x2 bf16 bf16x2 f32 f64",
    ),
    (
        "$cvt",
        "u8 u16 u32 u64 s8 s16 s32 s64 f16 bf16 f32 f64 tf32 b16 b32 b64",
    ),
];

/// The instruction table. See the module documentation for the notation.
pub const TABLE: &str = r#"
# ---- integer arithmetic -----------------------------------------------------------------------
add      T<u16 u32 u64 s16 s64>                                     : d:T a:T a:T
add      T<s32> {.sat}                                              : d:T a:T a:T
add      .cc T<u32 s32 u64 s64>                                     : d:T a:T a:T
add      T<f32> {.rn .rz .rm .rp} {.ftz} {.sat}                     : d:T a:T a:T
add      T<f64> {.rn .rz .rm .rp}                                   : d:T a:T a:T
add      T<f16 f16x2 bf16 bf16x2> {.rn} {.ftz} {.sat}               : d:T a:T a:T
add      T<u16x2 s16x2> {.sat}                                      : d:T a:T a:T
addc     {.cc} T<u32 s32 u64 s64>                                   : d:T a:T a:T
sub      T<u16 u32 u64 s16 s64>                                     : d:T a:T a:T
sub      T<s32> {.sat}                                              : d:T a:T a:T
sub      .cc T<u32 s32 u64 s64>                                     : d:T a:T a:T
sub      T<f32> {.rn .rz .rm .rp} {.ftz} {.sat}                     : d:T a:T a:T
sub      T<f64> {.rn .rz .rm .rp}                                   : d:T a:T a:T
sub      T<f16 f16x2 bf16 bf16x2> {.rn} {.ftz} {.sat}               : d:T a:T a:T
subc     {.cc} T<u32 s32 u64 s64>                                   : d:T a:T a:T
mul      <.lo .hi> T<$int>                                          : d:T a:T a:T
mul      .wide T<u16 u32 s16 s32>                                   : d:2T a:T a:T
mul      T<f32> {.rn .rz .rm .rp} {.ftz} {.sat}                     : d:T a:T a:T
mul      T<f64> {.rn .rz .rm .rp}                                   : d:T a:T a:T
mul      T<f16 f16x2 bf16 bf16x2> {.rn} {.ftz} {.sat}               : d:T a:T a:T
mad      <.lo .hi> {.cc} T<$int>                                    : d:T a:T a:T a:T
mad      .hi .sat T<s32>                                            : d:T a:T a:T a:T
mad      .wide {.cc} T<u16 u32 s16 s32>                             : d:2T a:T a:T a:2T
mad      T<f32> {.rn .rz .rm .rp} {.ftz} {.sat}                     : d:T a:T a:T a:T
mad      T<f64> {.rn .rz .rm .rp}                                   : d:T a:T a:T a:T
madc     <.lo .hi> {.cc} T<u32 s32 u64 s64>                         : d:T a:T a:T a:T
mul24    <.lo .hi> T<u32 s32>                                       : d:T a:T a:T
mad24    <.lo .hi> {.sat} T<u32 s32>                                : d:T a:T a:T a:T
sad      T<$int>                                                    : d:T a:T a:T a:T
div      T<$int>                                                    : d:T a:T a:T
div      <.approx .full> {.ftz} T<f32>                              : d:T a:T a:T
div      <.rn .rz .rm .rp> {.ftz} T<f32>                            : d:T a:T a:T
div      <.rn .rz .rm .rp> T<f64>                                   : d:T a:T a:T
rem      T<$int>                                                    : d:T a:T a:T
abs      T<s16 s32 s64>                                             : d:T a:T
abs      {.ftz} T<f32 f64 f16 f16x2 bf16 bf16x2>                    : d:T a:T
neg      T<s16 s32 s64>                                             : d:T a:T
neg      {.ftz} T<f32 f64 f16 f16x2 bf16 bf16x2>                    : d:T a:T
min      {.relu} T<$int s16x2 u16x2>                                : d:T a:T a:T
min      {.ftz} {.NaN} {.xorsign} {.abs} T<f32 f64 f16 f16x2 bf16 bf16x2> : d:T a:T a:T ?a:T
max      {.relu} T<$int s16x2 u16x2>                                : d:T a:T a:T
max      {.ftz} {.NaN} {.xorsign} {.abs} T<f32 f64 f16 f16x2 bf16 bf16x2> : d:T a:T a:T ?a:T
popc     T<b32 b64>                                                 : d:u32 a:T
clz      T<b32 b64>                                                 : d:u32 a:T
bfind    {.shiftamt} T<u32 u64 s32 s64>                             : d:u32 a:T
fns      T<b32>                                                     : d:T a:T a:u32 a:s32
brev     T<b32 b64>                                                 : d:T a:T
bfe      T<u32 u64 s32 s64>                                         : d:T a:T a:u32 a:u32
bfi      T<b32 b64>                                                 : d:T a:T a:T a:u32 a:u32
szext    <.clamp .wrap> T<u32 s32>                                  : d:T a:T a:u32
bmsk     <.clamp .wrap> T<b32>                                      : d:T a:u32 a:u32
dp4a     T<u32 s32> U<u32 s32>                                      : d:s32 a:T a:U a:s32
dp2a     <.lo .hi> T<u32 s32> U<u32 s32>                            : d:s32 a:T a:U a:s32
# ---- floating point ----------------------------------------------------------------------------
fma      <.rn .rz .rm .rp> {.ftz} {.sat} T<f32>                     : d:T a:T a:T a:T
fma      <.rn .rz .rm .rp> T<f64>                                   : d:T a:T a:T a:T
fma      .rn {.ftz} {.sat} {.relu} {.oob} T<f16 f16x2 bf16 bf16x2>  : d:T a:T a:T a:T
testp    <.finite .infinite .number .notanumber .normal .subnormal> T<f32 f64> : d:pred a:T
copysign T<f32 f64>                                                 : d:T a:T a:T
rcp      <.approx .rn .rz .rm .rp> {.ftz} T<f32>                    : d:T a:T
rcp      <.rn .rz .rm .rp> T<f64>                                   : d:T a:T
rcp      .approx .ftz T<f64>                                        : d:T a:T
sqrt     <.approx .rn .rz .rm .rp> {.ftz} T<f32>                    : d:T a:T
sqrt     <.rn .rz .rm .rp> T<f64>                                   : d:T a:T
rsqrt    .approx {.ftz} T<f32 f64>                                  : d:T a:T
sin      .approx {.ftz} T<f32>                                      : d:T a:T
cos      .approx {.ftz} T<f32>                                      : d:T a:T
lg2      .approx {.ftz} T<f32>                                      : d:T a:T
ex2      .approx {.ftz} T<f32>                                      : d:T a:T
ex2      .approx {.ftz} T<f16 f16x2 bf16 bf16x2>                    : d:T a:T
tanh     .approx T<f32 f16 f16x2 bf16 bf16x2>                       : d:T a:T
# ---- comparison and selection ------------------------------------------------------------------
set      <.eq .ne .lt .le .gt .ge .lo .ls .hi .hs .equ .neu .ltu .leu .gtu .geu .num .nan> {.ftz} T<u32 s32 f32> U<$intbit f32 f64> : d:T a:U a:U
set      <.eq .ne .lt .le .gt .ge .lo .ls .hi .hs .equ .neu .ltu .leu .gtu .geu .num .nan> <.and .or .xor> {.ftz} T<u32 s32 f32> U<$intbit f32 f64> : d:T a:U a:U p
set      <.eq .ne .lt .le .gt .ge .equ .neu .ltu .leu .gtu .geu .num .nan> {.ftz} T<u16 s16 u32 s32 f16 f16x2 bf16 bf16x2> U<f16 f16x2 bf16 bf16x2> : d:T a:U a:U
setp     <.eq .ne .lt .le .gt .ge .lo .ls .hi .hs .equ .neu .ltu .leu .gtu .geu .num .nan> {.ftz} T<$intbit f32 f64 f16 f16x2 bf16 bf16x2> : d|:pred a:T a:T
setp     <.eq .ne .lt .le .gt .ge .lo .ls .hi .hs .equ .neu .ltu .leu .gtu .geu .num .nan> <.and .or .xor> {.ftz} T<$intbit f32 f64 f16 f16x2 bf16 bf16x2> : d|:pred a:T a:T p
selp     T<$intbit f32 f64 f16 f16x2 bf16 bf16x2>                   : d:T a:T a:T p
slct     {.ftz} T<$intbit f32 f64> U<s32 f32>                       : d:T a:T a:T a:U
# ---- logic and shift ---------------------------------------------------------------------------
and      T<pred b16 b32 b64>                                        : d:T a:T a:T
or       T<pred b16 b32 b64>                                        : d:T a:T a:T
xor      T<pred b16 b32 b64>                                        : d:T a:T a:T
not      T<pred b16 b32 b64>                                        : d:T a:T
cnot     T<b16 b32 b64>                                             : d:T a:T
lop3     T<b32>                                                     : d:T a:T a:T a:T i:b32
lop3     <.or .and> T<b32>                                          : d|:pred a:T a:T a:T i:b32 p
shf      <.l .r> <.clamp .wrap> T<b32>                              : d:T a:T a:T a:u32
shl      T<b16 b32 b64>                                             : d:T a:T a:u32
shr      T<$intbit>                                                 : d:T a:T a:u32
# ---- data movement -----------------------------------------------------------------------------
mov      T<$mov>                                                    : d:T a:T
mov      V<.v2 .v4 .v8> T<b16 b32 b64 u16 u32 u64 s16 s32 s64 f16 f32 f64> : V V
prmt     {.f4e .b4e .rc8 .ecl .ecr .rc16} T<b32>                    : d:T a:T a:T a:b32
shfl     .sync <.up .down .bfly .idx> T<b32>                        : d|:T a:T a:u32 a:u32 a:b32
ld       {.weak .volatile .relaxed .acquire .mmio} {.cta .cluster .gpu .sys} {.global .shared .shared::cta .shared::cluster .local .param .param::entry .param::func .const} {.nc} {.ca .cg .cs .lu .cv} {.L1::evict_normal .L1::evict_unchanged .L1::evict_first .L1::evict_last .L1::no_allocate} {.L2::evict_normal .L2::evict_first .L2::evict_last} {.L2::cache_hint} {.L2::64B .L2::128B .L2::256B} {.unified} V{.v2 .v4 .v8} T<$ldst> : V m ?a:b64
ldu      {.global} V{.v2 .v4} T<$ldst>                              : V m
st       {.weak .volatile .relaxed .release .mmio} {.cta .cluster .gpu .sys} {.global .shared .shared::cta .shared::cluster .local .param .param::func} {.wb .cg .cs .wt} {.L1::evict_normal .L1::evict_unchanged .L1::evict_first .L1::evict_last .L1::no_allocate} {.L2::evict_normal .L2::evict_first .L2::evict_last} {.L2::cache_hint} V{.v2 .v4 .v8} T<$ldst> : m V ?a:b64
prefetch {.global .local} <.L1 .L2 .L2::evict_last .L2::evict_normal> : m
prefetch .global .tensormap                                          : m
prefetch .tensormap                                                  : m
prefetchu .L1                                                       : m
isspacep <.const .global .local .shared .shared::cta .shared::cluster .param .param::entry> : d:pred a:b64
cvta     {.to} <.const .global .local .shared .shared::cta .shared::cluster .param .param::entry> T<u32 u64> : d:T a:T
cvt      {.rn .rz .rm .rp .rni .rzi .rmi .rpi .rna .rs} {.ftz} {.sat} {.relu} {.satfinite} T<$cvt f16x2 bf16x2 e4m3x2 e5m2x2> U<$cvt f16x2 e4m3x2 e5m2x2> : d~:T a~:U ?a:U
cvt      .pack .sat T<u8 s8 u16 s16> U<s32> W<b32>                  : d:W a:U a:U a:W
mapa     {.shared::cluster} T<u32 u64>                              : d:T a:T a:u32 @sm90 'mapa'
getctarank {.shared::cluster} T<u32 u64>                            : d:u32 a:T @sm90 'getctarank'
createpolicy <.fractional .range> <.L2::evict_last .L2::evict_normal .L2::evict_first .L2::evict_unchanged> {.L2::evict_unchanged .L2::evict_first} T<b64> : d:T * @sm80 'createpolicy'
discard  .global .L2                                                 : m a:u32
applypriority .global .L2::evict_normal                              : m a:u32
cp.async <.ca .cg> .shared .global {.L2::cache_hint} {.L2::64B .L2::128B .L2::256B} : m m a:u32 * @sm80 'cp.async'
cp.async <.ca .cg> .shared::cta .global {.L2::cache_hint} {.L2::64B .L2::128B .L2::256B} : m m a:u32 * @sm80 'cp.async'
cp.async.commit_group                                                : @sm80 'cp.async'
cp.async.wait_group                                                  : i:u32 @sm80 'cp.async'
cp.async.wait_all                                                    : @sm80 'cp.async'
cp.async.mbarrier.arrive {.noinc} {.shared .shared::cta} T<b64>      : m @sm80 'cp.async.mbarrier.arrive'
cp.async.bulk <.shared::cluster .shared::cta .global> <.global .shared::cta> {.mbarrier::complete_tx::bytes .bulk_group} {.multicast::cluster} {.L2::cache_hint} : m m a:u32 * @sm90 'cp.async.bulk'
cp.async.bulk.tensor <.1d .2d .3d .4d .5d> <.shared::cluster .global> <.global .shared::cta> {.tile .im2col .im2col_no_offs} {.mbarrier::complete_tx::bytes .bulk_group} {.multicast::cluster} {.L2::cache_hint} : m m * @sm90 'cp.async.bulk.tensor'
cp.reduce.async.bulk <.shared::cluster .global> .shared::cta {.mbarrier::complete_tx::bytes .bulk_group} <.and .or .xor .add .inc .dec .min .max> {.noftz} {.L2::cache_hint} T<b32 u32 s32 b64 u64 s64 f32 f64 f16 bf16> : m m a:u32 * @sm90 'cp.reduce.async.bulk'
cp.reduce.async.bulk.tensor <.1d .2d .3d .4d .5d> .global .shared::cta <.add .min .max .inc .dec .and .or .xor> {.tile .im2col_no_offs} .bulk_group {.L2::cache_hint} : m m * @sm90 'cp.reduce.async.bulk.tensor'
cp.async.bulk.prefetch .L2 .global {.L2::cache_hint}                 : m a:u32 * @sm90 'cp.async.bulk.prefetch'
cp.async.bulk.prefetch.tensor <.1d .2d .3d .4d .5d> .L2 .global {.tile .im2col} {.L2::cache_hint} : m * @sm90 'cp.async.bulk.prefetch.tensor'
cp.async.bulk.commit_group                                           : @sm90 'cp.async.bulk'
cp.async.bulk.wait_group {.read}                                     : i:u32 @sm90 'cp.async.bulk'
tensormap.replace <.tile> <.global_address .rank .box_dim .global_dim .global_stride .element_stride .elemtype .interleave_layout .swizzle_mode .fill_mode> {.global .shared::cta} T<b1024> U<b32 b64> : m * @sm90a 'tensormap.replace'
tensormap.cp_fenceproxy .global .shared::cta .tensormap::generic .release <.cta .cluster .gpu .sys> .sync .aligned : m m a:u32 @sm90 'tensormap.cp_fenceproxy'
# multimem: the op/type pairs ptxas 13.1 accepts (probes 12_multimem: 70 of 139 accepted).
multimem.ld_reduce {.weak .relaxed .acquire} {.cta .cluster .gpu .sys} .global .add T<u32 s32 u64> : d:T m @sm90 'multimem.ld_reduce'
multimem.ld_reduce {.weak .relaxed .acquire} {.cta .cluster .gpu .sys} .global .add V{.v2 .v4 .v8} T<f32 f16x2 bf16x2> : V m @sm90 'multimem.ld_reduce'
multimem.ld_reduce {.weak .relaxed .acquire} {.cta .cluster .gpu .sys} .global .add .acc::f32 V{.v2 .v4 .v8} T<f16x2 bf16x2> : V m @sm90 'multimem.ld_reduce'
multimem.ld_reduce {.weak .relaxed .acquire} {.cta .cluster .gpu .sys} .global <.min .max> T<u32 s32 u64 s64> : d:T m @sm90 'multimem.ld_reduce'
multimem.ld_reduce {.weak .relaxed .acquire} {.cta .cluster .gpu .sys} .global <.min .max> V{.v2 .v4 .v8} T<f16x2 bf16x2> : V m @sm90 'multimem.ld_reduce'
multimem.ld_reduce {.weak .relaxed .acquire} {.cta .cluster .gpu .sys} .global <.and .or .xor> T<b32 b64> : d:T m @sm90 'multimem.ld_reduce'
multimem.st {.weak .relaxed .release} {.cta .cluster .gpu .sys} .global V{.v2 .v4 .v8} T<b32 b64 f32 f64 f16x2 bf16x2> : m V @sm90 'multimem.st'
multimem.red {.relaxed .release} {.cta .cluster .gpu .sys} .global .add T<u32 s32 u64> : m a:T @sm90 'multimem.red'
multimem.red {.relaxed .release} {.cta .cluster .gpu .sys} .global .add V{.v2 .v4 .v8} T<f32 f64 f16x2 bf16x2> : m V @sm90 'multimem.red'
multimem.red {.relaxed .release} {.cta .cluster .gpu .sys} .global <.min .max> T<u32 s32 u64 s64> : m a:T @sm90 'multimem.red'
multimem.red {.relaxed .release} {.cta .cluster .gpu .sys} .global <.and .or .xor> T<b32 b64> : m a:T @sm90 'multimem.red'
# ---- textures and surfaces ---------------------------------------------------------------------
tex      <.1d .2d .3d .a1d .a2d .cube .acube .2dms .a2dms> V<.v4> T<u32 s32 f16 f32> U<s32 f32> : V _ ?_ ?_ ?_
tex      .base <.1d .2d .3d .a1d .a2d .cube .acube .2dms .a2dms> V<.v4> T<u32 s32 f16 f32> U<s32 f32> : V _ ?_ ?_ ?_
tex      .level <.1d .2d .3d .a1d .a2d .cube .acube .2dms .a2dms> V<.v4> T<u32 s32 f16 f32> U<s32 f32> : V _ _ ?_ ?_
tex      .grad <.1d .2d .3d .a1d .a2d .cube .acube .2dms .a2dms> V<.v4> T<u32 s32 f16 f32> U<s32 f32> : V _ _ _ ?_
tld4     <.r .g .b .a> <.2d .a2d .cube .acube> V<.v4> T<u32 s32 f32> U<f32> : V _ ?_ ?_ ?_
txq      {.level} <.width .height .depth .channel_data_type .channel_order .normalized_coords .array_size .num_mipmap_levels .num_samples .force_unnormalized_coords .filter_mode .addr_mode_0 .addr_mode_1 .addr_mode_2> T<b32> : d _ ?_
suld     .b <.1d .2d .3d .a1d .a2d> {.ca .cg .cs .cv} {.trap .clamp .zero} V{.v2 .v4} T<b8 b16 b32 b64> : V _
sust     <.b .p> <.1d .2d .3d .a1d .a2d> {.wb .cg .cs .wt} {.trap .clamp .zero} V{.v2 .v4} T<b8 b16 b32 b64> : _ V
suq      <.width .height .depth .channel_data_type .channel_order .array_size .memory_layout> T<b32> : d _
istypep  <.texref .samplerref .surfref>                              : d:pred _
# ---- control flow ------------------------------------------------------------------------------
bra      {.uni}                                                     : l
brx.idx  {.uni}                                                     : a:u32 _
call     {.uni}                                                     : _ *
ret      {.uni}                                                     :
exit                                                                :
trap                                                                :
brkpt                                                               :
# ---- synchronisation and communication ---------------------------------------------------------
bar      <.sync .arrive> {.aligned}                                 : ?a:b32 ?a:b32
bar      .red <.popc> {.aligned} T<u32>                             : d:T a:b32 ?a:b32 p
bar      .red <.and .or> {.aligned} T<pred>                         : d:T a:b32 ?a:b32 p
barrier  <.sync .arrive> {.aligned}                                 : ?a:b32 ?a:b32
barrier  .red <.popc> {.aligned} T<u32>                             : d:T a:b32 ?a:b32 p
barrier  .red <.and .or> {.aligned} T<pred>                         : d:T a:b32 ?a:b32 p
bar.warp.sync                                                        : a:b32
barrier.cluster.arrive {.release .relaxed} {.aligned}                : @sm90 'barrier.cluster.arrive'
barrier.cluster.wait {.acquire} {.aligned}                           : @sm90 'barrier.cluster.wait'
membar   <.cta .gl .sys>                                            :
fence    {.sc .acq_rel .acquire .release} {.cta .cluster .gpu .sys}  :
fence    .mbarrier_init .release .cluster                            : @sm90 'fence.mbarrier_init'
fence    .proxy .alias                                               : @sm70 'fence.proxy.alias'
fence    .proxy .async {.global .shared::cta .shared::cluster}       : @sm90 'fence.proxy.async'
fence    .proxy .tensormap::generic <.release .acquire> <.cta .cluster .gpu .sys> : ?m ?i:u32 @sm90 'fence.proxy.tensormap'
atom     {.relaxed .acquire .release .acq_rel} {.cta .cluster .gpu .sys} {.global .shared .shared::cta .shared::cluster} <.and .or .xor .exch .add .inc .dec .min .max> {.noftz} {.L2::cache_hint} V{.v2 .v4 .v8} T<b32 b64 u32 u64 s32 s64 f32 f64 f16 f16x2 bf16 bf16x2 b128> : V m V ?a:b64
atom     {.relaxed .acquire .release .acq_rel} {.cta .cluster .gpu .sys} {.global .shared .shared::cta .shared::cluster} .cas {.L2::cache_hint} T<b16 b32 b64 b128> : d:T m a:T a:T ?a:b64
red      {.relaxed .release} {.cta .cluster .gpu .sys} {.global .shared .shared::cta .shared::cluster} <.and .or .xor .add .inc .dec .min .max> {.noftz} {.L2::cache_hint} V{.v2 .v4 .v8} T<b32 b64 u32 u64 s32 s64 f32 f64 f16 f16x2 bf16 bf16x2> : m V ?a:b64
red.async {.relaxed} .cluster {.shared::cluster} .mbarrier::complete_tx::bytes <.inc .dec .min .max .add .and .or .xor> T<b32 b64 u32 s32 u64> : m a:T m @sm90 'red.async'
st.async {.weak} {.shared::cluster} .mbarrier::complete_tx::bytes V{.v2 .v4} T<b32 b64 u32 s32 u64 s64 f32 f64> : m V m @sm90 'st.async'
vote     .sync <.all .any .uni> T<pred>                             : d:pred p a:b32
vote     .sync .ballot T<b32>                                       : d:u32 p a:b32
vote     <.all .any .uni> T<pred>                                   : d:pred p !nonsync
vote     .ballot T<b32>                                             : d:u32 p !nonsync
match    <.any .all> .sync T<b32 b64>                               : d|:b32 a:T a:b32
activemask T<b32>                                                   : d:T
redux    .sync <.add .min .max> T<u32 s32>                          : d:T a:T a:b32 @sm80 'redux.sync'
redux    .sync <.and .or .xor> T<b32>                               : d:T a:T a:b32 @sm80 'redux.sync'
redux    .sync <.min .max> {.abs} {.NaN} T<f32>                      : d:T a:T a:b32 @sm100a 'redux.sync.f32'
griddepcontrol <.launch_dependents .wait>                           : @sm90 'griddepcontrol'
elect    .sync                                                      : d|:u32 a:b32 @sm90 'elect'
mbarrier.init {.shared .shared::cta} T<b64>                          : m a:u32 @sm80 'mbarrier'
mbarrier.inval {.shared .shared::cta} T<b64>                         : m @sm80 'mbarrier'
mbarrier.expect_tx {.relaxed} {.cta .cluster} {.shared .shared::cta .shared::cluster} T<b64> : m a:u32 @sm90 'mbarrier.expect_tx'
mbarrier.complete_tx {.relaxed} {.cta .cluster} {.shared .shared::cta .shared::cluster} T<b64> : m a:u32 @sm90 'mbarrier.complete_tx'
mbarrier.arrive {.release .relaxed} {.cta .cluster} {.shared .shared::cta .shared::cluster} {.noComplete} T<b64> : d:b64 m ?a:u32 @sm80 'mbarrier'
mbarrier.arrive .expect_tx {.release .relaxed} {.cta .cluster} {.shared .shared::cta .shared::cluster} T<b64> : d:b64 m a:u32 @sm90 'mbarrier.arrive.expect_tx'
mbarrier.arrive_drop {.release .relaxed} {.cta .cluster} {.shared .shared::cta .shared::cluster} {.noComplete} T<b64> : d:b64 m ?a:u32 @sm80 'mbarrier'
mbarrier.arrive_drop .expect_tx {.release .relaxed} {.cta .cluster} {.shared .shared::cta .shared::cluster} T<b64> : d:b64 m a:u32 @sm90 'mbarrier.arrive_drop.expect_tx'
mbarrier.test_wait {.acquire .relaxed} {.cta .cluster} {.shared .shared::cta} T<b64> : d:pred m a:b64 @sm80 'mbarrier'
mbarrier.test_wait .parity {.acquire .relaxed} {.cta .cluster} {.shared .shared::cta} T<b64> : d:pred m a:u32 @sm80 'mbarrier'
mbarrier.try_wait {.acquire .relaxed} {.cta .cluster} {.shared .shared::cta} T<b64> : d:pred m a:b64 ?a:u32 @sm90 'mbarrier.try_wait'
mbarrier.try_wait .parity {.acquire .relaxed} {.cta .cluster} {.shared .shared::cta} T<b64> : d:pred m a:u32 ?a:u32 @sm90 'mbarrier.try_wait'
mbarrier.pending_count T<b64>                                        : d:u32 a:b64 @sm80 'mbarrier'
setmaxnreg <.inc .dec> .sync .aligned T<u32>                         : i:u32 @sm90a 'setmaxnreg'
nanosleep T<u32>                                                     : a:u32 @sm70 'nanosleep'
pmevent  {.mask}                                                     : i:u32
stacksave T<u32 u64>                                                 : d:T
stackrestore T<u32 u64>                                              : a:T
alloca   {.local} T<u32 u64>                                         : d:T a:T ?i:u32
# ---- matrix ------------------------------------------------------------------------------------
ldmatrix .sync .aligned .m8n8 <.x1 .x2 .x4> {.trans} {.shared .shared::cta} T<b16> : _ m @sm75 'ldmatrix'
stmatrix .sync .aligned .m8n8 <.x1 .x2 .x4> {.trans} {.shared .shared::cta} T<b16> : m _ @sm90 'stmatrix'
movmatrix .sync .aligned .m8n8 .trans T<b16>                         : d:b32 a:b32 @sm75 'movmatrix'
mma      .sync .aligned <.m8n8k4 .m16n8k8 .m16n8k16 .m16n8k32 .m16n8k4 .m8n8k16 .m8n8k32 .m16n8k64 .m8n8k128 .m16n8k128 .m16n8k256> {.row} {.col} {.satfinite} T<f16 f32 s32 f64> U<f16 bf16 tf32 s8 u8 s4 u4 f64 e4m3 e5m2 b1> W<f16 bf16 tf32 s8 u8 s4 u4 f64 e4m3 e5m2 b1> X{f16 f32 s32 f64} : _ _ _ _ @sm80 'mma'
wgmma.fence .sync .aligned                                           : @sm90a 'wgmma.fence'
wgmma.commit_group .sync .aligned                                    : @sm90a 'wgmma.commit_group'
wgmma.wait_group .sync .aligned                                      : i:u32 @sm90a 'wgmma.wait_group'
wgmma.mma_async {.sp} .sync .aligned <.m64n8k16 .m64n16k16 .m64n24k16 .m64n32k16 .m64n40k16 .m64n48k16 .m64n56k16 .m64n64k16 .m64n72k16 .m64n80k16 .m64n88k16 .m64n96k16 .m64n104k16 .m64n112k16 .m64n120k16 .m64n128k16 .m64n136k16 .m64n144k16 .m64n152k16 .m64n160k16 .m64n168k16 .m64n176k16 .m64n184k16 .m64n192k16 .m64n200k16 .m64n208k16 .m64n216k16 .m64n224k16 .m64n232k16 .m64n240k16 .m64n248k16 .m64n256k16 .m64n8k32 .m64n16k32 .m64n24k32 .m64n32k32 .m64n40k32 .m64n48k32 .m64n56k32 .m64n64k32 .m64n72k32 .m64n80k32 .m64n88k32 .m64n96k32 .m64n104k32 .m64n112k32 .m64n120k32 .m64n128k32 .m64n136k32 .m64n144k32 .m64n152k32 .m64n160k32 .m64n168k32 .m64n176k32 .m64n184k32 .m64n192k32 .m64n200k32 .m64n208k32 .m64n216k32 .m64n224k32 .m64n232k32 .m64n240k32 .m64n248k32 .m64n256k32 .m64n8k8 .m64n16k8 .m64n24k8 .m64n32k8 .m64n64k8 .m64n128k8 .m64n256k8> {.satfinite} T<f16 f32 s32> U<f16 bf16 tf32 e4m3 e5m2 s8 u8 b1> W<f16 bf16 tf32 e4m3 e5m2 s8 u8 b1> : _ _ _ * @sm90a 'wgmma.mma_async'
# ---- video (scalar) ----------------------------------------------------------------------------
vadd     T<u32 s32> U<u32 s32> W<u32 s32> {.sat} {.add .min .max}   : d:T a:U a:W ?a:T
vsub     T<u32 s32> U<u32 s32> W<u32 s32> {.sat} {.add .min .max}   : d:T a:U a:W ?a:T
vabsdiff T<u32 s32> U<u32 s32> W<u32 s32> {.sat} {.add .min .max}   : d:T a:U a:W ?a:T
vmin     T<u32 s32> U<u32 s32> W<u32 s32> {.sat} {.add .min .max}   : d:T a:U a:W ?a:T
vmax     T<u32 s32> U<u32 s32> W<u32 s32> {.sat} {.add .min .max}   : d:T a:U a:W ?a:T
vshl     T<u32 s32> U<u32 s32> W<u32> {.sat} <.clamp .wrap> {.add .min .max} : d:T a:U a:W ?a:T
vshr     T<u32 s32> U<u32 s32> W<u32> {.sat} <.clamp .wrap> {.add .min .max} : d:T a:U a:W ?a:T
"#;

/// A type slot constraint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeSlot {
    /// `T`, `U`, `W` or `X`.
    pub slot: char,
    pub required: bool,
    /// The allowed types with their dots, in table order (for messages).
    pub allowed: Vec<String>,
    /// The same without dots, for lookup.
    pub allowed_set: FxHashSet<String>,
}

/// A group of alternative modifiers (written with the dot).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModGroup {
    pub required: bool,
    /// The vector-width group (`V{.v2 .v4}`).
    pub vector: bool,
    pub alternatives: Vec<String>,
}

/// The type an operand must have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeRef {
    /// A type slot (`T`, `U`, …).
    Slot(char),
    /// Twice the width of a slot's type (`2T`).
    Double(char),
    /// A fixed type (`u32`, `pred`).
    Fixed(String),
}

/// What an operand position accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OperandKind {
    /// `d`: a destination register; `relaxed` allows a wider register; `pair` allows `p|q`.
    Dest {
        ty: TypeRef,
        relaxed: bool,
        pair: bool,
    },
    /// `a`: a register or an immediate.
    Value(TypeRef),
    /// `a~`: a register (which may be wider than the type, as cvt allows) or an immediate.
    WideValue(TypeRef),
    /// `r`: a register only.
    Register(TypeRef),
    /// `i`: an immediate only.
    Immediate(TypeRef),
    /// `p`: a predicate source.
    Pred,
    /// `m`: a memory address.
    Address,
    /// `l`: a branch target.
    Label,
    /// `V`: the data operand of a load/store/atomic.
    Data,
    /// `_`: anything (not checked here).
    Any,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperandSpec {
    pub kind: OperandKind,
    pub optional: bool,
}

/// One form of an opcode.
#[derive(Clone, Debug)]
pub struct Form {
    /// The full opcode, e.g. `add`, `barrier.cluster.arrive`.
    pub opcode: String,
    pub types: Vec<TypeSlot>,
    /// Fixed modifiers that must all be present (`.cc` in `add .cc T<...>`).
    pub fixed: Vec<String>,
    pub groups: Vec<ModGroup>,
    pub operands: Vec<OperandSpec>,
    /// More operands may follow the listed ones.
    pub variadic: bool,
    /// `(sm, feature)`: the lowest target and ptxas's feature name.
    pub gate: Option<(u32, bool, String)>,
    /// Rejected from PTX 6.4 on sm_70+ (vote without .sync).
    pub nonsync: bool,
    /// The table line, for diagnostics and documentation.
    pub line: usize,
    /// Modifier word → the groups (indices into `groups`) that take it.
    pub group_index: FxHashMap<String, Vec<usize>>,
}

impl Form {
    /// Whether `m` (with the dot) may appear on this form.
    pub fn allows_modifier(&self, m: &str) -> bool {
        self.fixed.iter().any(|f| f == m) || self.group_index.contains_key(m)
    }

    /// Whether the written types fit this form's type slots, in order.
    pub fn types_fit<'a>(&self, types: impl ExactSizeIterator<Item = &'a str>) -> bool {
        let required = self.types.iter().filter(|s| s.required).count();
        let n = types.len();
        n >= required
            && n <= self.types.len()
            && types
                .zip(&self.types)
                .all(|(t, slot)| slot.allowed_set.contains(t))
    }
}

/// The table, indexed by opcode. An opcode's lines are parsed into [`Form`]s the first time it is
/// looked up: a run uses a few of the table's opcodes, and start-up only splits the table into
/// lines.
pub struct Isa {
    opcodes: FxHashMap<&'static str, Opcode>,
    /// First words of the compound opcodes (`cp` of `cp.async.bulk`), to find them quickly.
    compound_heads: FxHashSet<&'static str>,
    /// Every modifier word that appears anywhere in the table (with the dot), built on first use.
    vocabulary: OnceLock<FxHashSet<String>>,
    /// The longest compound opcode, in words (`cp.async.bulk.prefetch.tensor` = 5).
    pub max_opcode_words: usize,
}

/// The table lines of one opcode and, once asked for, their forms.
struct Opcode {
    /// `(line number, line)`, in table order.
    lines: Vec<(usize, &'static str)>,
    forms: OnceLock<Vec<Form>>,
}

impl Isa {
    /// The forms of an opcode (`add`, `cp.async.bulk`), in table order.
    pub fn forms(&self, opcode: &str) -> Option<&[Form]> {
        let op = self.opcodes.get(opcode)?;
        let forms = op.forms.get_or_init(|| {
            op.lines
                .iter()
                .map(|&(n, line)| parse_form(n, line))
                .collect::<Result<_, _>>()
                .unwrap_or_else(|e| panic!("isa.rs TABLE: {e}"))
        });
        Some(forms)
    }

    /// Every opcode of the table.
    pub fn opcodes(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.opcodes.keys().copied()
    }

    /// Every modifier word that appears anywhere in the table (with the dot).
    pub fn vocabulary(&self) -> &FxHashSet<String> {
        self.vocabulary.get_or_init(|| {
            let mut words = FxHashSet::default();
            for op in self.opcodes() {
                for f in self.forms(op).unwrap_or_default() {
                    words.extend(f.fixed.iter().cloned());
                    for g in &f.groups {
                        words.extend(g.alternatives.iter().cloned());
                    }
                }
            }
            words
        })
    }

    /// Finds the longest known compound opcode of an instruction (`cp.async.bulk.tensor`) and
    /// returns it with the modifiers that follow it.
    pub fn split_opcode<'i>(
        &self,
        ins: &'i crate::frontend::ast::Instruction,
    ) -> Option<(String, Vec<&'i crate::frontend::ast::Name>)> {
        let head = ins.opcode.text.as_str();
        if self.compound_heads.contains(head) {
            let words: Vec<&str> = std::iter::once(head)
                .chain(ins.modifiers.iter().map(|m| m.text.as_str()))
                .collect();
            for n in (2..=self.max_opcode_words.min(words.len())).rev() {
                let name = words[..n].concat();
                if self.opcodes.contains_key(name.as_str()) {
                    return Some((name, ins.modifiers[n - 1..].iter().collect()));
                }
            }
        }
        self.opcodes
            .contains_key(head)
            .then(|| (head.to_string(), ins.modifiers.iter().collect()))
    }

    /// The table, indexed once.
    pub fn get() -> &'static Isa {
        static ISA: OnceLock<Isa> = OnceLock::new();
        ISA.get_or_init(|| index_table(TABLE))
    }
}

fn expand_types(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    for w in list.split_whitespace() {
        match TYPE_SETS.iter().find(|(n, _)| *n == w) {
            Some((_, set)) => out.extend(set.split_whitespace().map(|s| format!(".{s}"))),
            None => out.push(format!(".{w}")),
        }
    }
    out
}

fn parse_type_ref(s: &str) -> Result<TypeRef, String> {
    Ok(match s {
        "T" | "U" | "W" | "X" => TypeRef::Slot(s.chars().next().unwrap_or('T')),
        "2T" => TypeRef::Double('T'),
        other if TYPE_NAMES.contains(&other) => TypeRef::Fixed(format!(".{other}")),
        other => return Err(format!("unknown operand type `{other}`")),
    })
}

/// Splits a form's modifier part into items, keeping `{...}` / `<...>` groups together.
fn split_items(s: &str) -> Result<Vec<String>, String> {
    let mut items = Vec::new();
    let mut cur = String::new();
    let mut depth = 0;
    for c in s.chars() {
        match c {
            '{' | '<' => {
                depth += 1;
                cur.push(c);
            }
            '}' | '>' => {
                depth -= 1;
                cur.push(c);
            }
            c if c.is_whitespace() && depth == 0 => {
                if !cur.is_empty() {
                    items.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if depth != 0 {
        return Err(format!("unbalanced group in `{s}`"));
    }
    if !cur.is_empty() {
        items.push(cur);
    }
    Ok(items)
}

/// Splits the table into the lines of each opcode (the first word of a line).
fn index_table(text: &'static str) -> Isa {
    let mut opcodes: FxHashMap<&'static str, Opcode> = FxHashMap::default();
    for (idx, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let opcode = line.split_whitespace().next().unwrap_or_default();
        opcodes
            .entry(opcode)
            .or_insert_with(|| Opcode {
                lines: Vec::new(),
                forms: OnceLock::new(),
            })
            .lines
            .push((idx + 1, line));
    }
    let compound_heads = opcodes
        .keys()
        .filter_map(|k| k.split_once('.').map(|(head, _)| head))
        .collect();
    let max_opcode_words = opcodes
        .keys()
        .map(|k| k.split('.').count())
        .max()
        .unwrap_or(1);
    Isa {
        opcodes,
        compound_heads,
        vocabulary: OnceLock::new(),
        max_opcode_words,
    }
}

/// Parses one line of the table (`line_no` is its 1-based number, for messages).
fn parse_form(line_no: usize, line: &str) -> Result<Form, String> {
    let (head, tail) = line
        .split_once(" :")
        .or_else(|| line.split_once(':').filter(|(h, _)| !h.contains("::")))
        .ok_or_else(|| format!("line {line_no}: no `:` in `{line}`"))?;
    let mut items = split_items(head).map_err(|e| format!("line {line_no}: {e}"))?;
    if items.is_empty() {
        return Err(format!("line {line_no}: no opcode"));
    }
    let opcode = items.remove(0);
    let mut form = Form {
        opcode,
        types: vec![],
        fixed: vec![],
        groups: vec![],
        operands: vec![],
        variadic: false,
        gate: None,
        nonsync: false,
        line: line_no,
        group_index: FxHashMap::default(),
    };
    for item in items {
        let (prefix, body) = match item.find(['{', '<']) {
            Some(i) => (&item[..i], &item[i..]),
            None => ("", item.as_str()),
        };
        let required = body.starts_with('<');
        let inner = body
            .strip_prefix(['{', '<'])
            .and_then(|b| b.strip_suffix(['}', '>']));
        match (prefix, inner) {
            ("T" | "U" | "W" | "X", Some(list)) => {
                let allowed = expand_types(list);
                form.types.push(TypeSlot {
                    slot: prefix.chars().next().unwrap_or('T'),
                    required,
                    allowed_set: allowed.iter().map(|t| t[1..].to_string()).collect(),
                    allowed,
                })
            }
            ("V", Some(list)) | ("", Some(list)) => {
                let alternatives: Vec<String> =
                    list.split_whitespace().map(str::to_string).collect();
                form.groups.push(ModGroup {
                    required,
                    vector: prefix == "V",
                    alternatives,
                });
            }
            ("", None) if body.starts_with('.') => {
                // `.xorsign.abs` is one group alternative written as two words.
                form.fixed.push(body.to_string());
            }
            _ => return Err(format!("line {line_no}: cannot read `{item}`")),
        }
    }
    let mut rest = tail.split_whitespace().peekable();
    while let Some(tok) = rest.next() {
        if let Some(sm) = tok.strip_prefix("@sm") {
            let arch_a = sm.ends_with('a');
            let num: u32 = sm
                .trim_end_matches('a')
                .parse()
                .map_err(|_| format!("line {line_no}: bad gate `{tok}`"))?;
            let mut feature = String::new();
            for w in rest.by_ref() {
                feature.push_str(w);
                if w.ends_with('\'') && feature.len() > 1 {
                    break;
                }
                feature.push(' ');
            }
            form.gate = Some((num, arch_a, feature.trim_matches('\'').to_string()));
            continue;
        }
        if tok == "!nonsync" {
            form.nonsync = true;
            continue;
        }
        if tok == "*" {
            form.variadic = true;
            continue;
        }
        let (optional, tok) = match tok.strip_prefix('?') {
            Some(t) => (true, t),
            None => (false, tok),
        };
        let (letter, ty) = match tok.split_once(':') {
            Some((l, t)) => (
                l,
                Some(parse_type_ref(t).map_err(|e| format!("line {line_no}: {e}"))?),
            ),
            None => (tok, None),
        };
        let ty_or_t = || ty.clone().unwrap_or(TypeRef::Slot('T'));
        let kind = match letter {
            "d" => OperandKind::Dest {
                ty: ty_or_t(),
                relaxed: false,
                pair: false,
            },
            "d~" => OperandKind::Dest {
                ty: ty_or_t(),
                relaxed: true,
                pair: false,
            },
            "d|" => OperandKind::Dest {
                ty: ty_or_t(),
                relaxed: false,
                pair: true,
            },
            "a" => OperandKind::Value(ty_or_t()),
            "a~" => OperandKind::WideValue(ty_or_t()),
            "r" => OperandKind::Register(ty_or_t()),
            "i" => OperandKind::Immediate(ty_or_t()),
            "p" => OperandKind::Pred,
            "m" => OperandKind::Address,
            "l" => OperandKind::Label,
            "V" => OperandKind::Data,
            "_" => OperandKind::Any,
            other => return Err(format!("line {line_no}: unknown operand `{other}`")),
        };
        form.operands.push(OperandSpec { kind, optional });
    }
    for (i, g) in form.groups.iter().enumerate() {
        for a in &g.alternatives {
            form.group_index.entry(a.clone()).or_default().push(i);
        }
    }
    Ok(form)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_parses() {
        let isa = Isa::get();
        assert!(isa.opcodes.len() > 100, "{} opcodes", isa.opcodes.len());
        // Every line parses (forms are otherwise only parsed when an opcode is used).
        for op in isa.opcodes() {
            let forms = isa.forms(op).unwrap();
            assert!(forms.iter().all(|f| f.opcode == op), "{op}");
        }
        assert!(isa.vocabulary().contains(".shared::cluster"));
        let add = isa.forms("add").unwrap();
        assert!(
            add.iter()
                .any(|f| f.types[0].allowed.contains(&".f32".to_string()))
        );
        let mapa = &isa.forms("mapa").unwrap()[0];
        assert_eq!(mapa.gate, Some((90, false, "mapa".to_string())));
        assert_eq!(isa.max_opcode_words, 5); // cp.async.bulk.prefetch.tensor
    }
}
