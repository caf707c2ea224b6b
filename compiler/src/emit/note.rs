//! `.note.nv.tkinfo` and `.note.nv.cuinfo` (layouts in [`runtime_abi::note`]).

use super::model::{CudaInfo, ToolInfo};
use runtime_abi::note::*;

fn note(ty: u32, desc: &[u8]) -> Vec<u8> {
    let name = OWNER.as_bytes();
    let namesz = name.len() + 1;
    let mut out = Vec::new();
    out.extend_from_slice(&(namesz as u32).to_le_bytes());
    out.extend_from_slice(&(desc.len() as u32).to_le_bytes());
    out.extend_from_slice(&ty.to_le_bytes());
    out.extend_from_slice(name);
    out.push(0);
    out.resize(out.len().next_multiple_of(4), 0);
    out.extend_from_slice(desc);
    out.resize(out.len().next_multiple_of(4), 0);
    out
}

/// The `.note.nv.tkinfo` section.
pub fn encode_tkinfo(t: &ToolInfo) -> Vec<u8> {
    let mut strings = Vec::new();
    let mut offs = Vec::new();
    for s in [
        &t.object_name,
        &t.tool_name,
        &t.tool_version,
        &t.tool_branch,
        &t.tool_options,
    ] {
        offs.push(strings.len() as u32);
        strings.extend_from_slice(s.as_bytes());
        strings.push(0);
    }
    let mut desc = Vec::new();
    desc.extend_from_slice(&NOTE_VERSION.to_le_bytes());
    for o in offs {
        desc.extend_from_slice(&o.to_le_bytes());
    }
    desc.extend_from_slice(&strings);
    desc.resize(desc.len().next_multiple_of(4), 0);
    note(NT_CUDA_TOOLKIT_INFO, &desc)
}

/// The `.note.nv.cuinfo` section.
pub fn encode_cuinfo(c: &CudaInfo) -> Vec<u8> {
    let mut desc = Vec::new();
    desc.extend_from_slice(&(NOTE_VERSION as u16).to_le_bytes());
    desc.extend_from_slice(&c.virtual_sm.to_le_bytes());
    desc.extend_from_slice(&c.toolkit.to_le_bytes());
    note(NT_CUDA_INFO, &desc)
}

fn parse_note(b: &[u8], want: u32) -> Result<&[u8], String> {
    if b.len() < 12 {
        return Err("note too short".into());
    }
    let u = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]) as usize;
    let (namesz, descsz, ty) = (u(0), u(4), u(8) as u32);
    if ty != want {
        return Err(format!("note type {ty}, expected {want}"));
    }
    let name_end = 12 + namesz;
    let desc_at = name_end.next_multiple_of(4);
    if desc_at + descsz > b.len() {
        return Err("note runs past its section".into());
    }
    if &b[12..name_end] != [OWNER.as_bytes(), b"\0"].concat().as_slice() {
        return Err("note owner is not \"NVIDIA Corp\"".into());
    }
    Ok(&b[desc_at..desc_at + descsz])
}

pub fn decode_tkinfo(b: &[u8]) -> Result<ToolInfo, String> {
    let d = parse_note(b, NT_CUDA_TOOLKIT_INFO)?;
    if d.len() < 24 {
        return Err("tkinfo note too short".into());
    }
    let u = |i: usize| u32::from_le_bytes([d[i], d[i + 1], d[i + 2], d[i + 3]]) as usize;
    if u(0) as u32 != NOTE_VERSION {
        return Err(format!("tkinfo note version {}", u(0)));
    }
    let strs = &d[24..];
    let s = |i: usize| -> Result<String, String> {
        let o = u(4 + 4 * i);
        let rest = strs
            .get(o..)
            .ok_or_else(|| "tkinfo string offset out of range".to_string())?;
        let end = rest
            .iter()
            .position(|&c| c == 0)
            .ok_or_else(|| "tkinfo string not terminated".to_string())?;
        Ok(String::from_utf8_lossy(&rest[..end]).into_owned())
    };
    let t = ToolInfo {
        object_name: s(0)?,
        tool_name: s(1)?,
        tool_version: s(2)?,
        tool_branch: s(3)?,
        tool_options: s(4)?,
    };
    if encode_tkinfo(&t) != b {
        return Err("tkinfo note is not laid out as ptxas lays it out".into());
    }
    Ok(t)
}

pub fn decode_cuinfo(b: &[u8]) -> Result<CudaInfo, String> {
    let d = parse_note(b, NT_CUDA_INFO)?;
    if d.len() != 8 {
        return Err("cuinfo note is not 8 bytes".into());
    }
    let c = CudaInfo {
        virtual_sm: u16::from_le_bytes([d[2], d[3]]),
        toolkit: u32::from_le_bytes([d[4], d[5], d[6], d[7]]),
    };
    if encode_cuinfo(&c) != b {
        return Err("cuinfo note is not laid out as ptxas lays it out".into());
    }
    Ok(c)
}
