//! The reference toolchain ptxc is checked against: NVIDIA's `ptxas`, `nvdisasm`, `cuobjdump` and
//! `nvcc`, installed from pinned PyPI wheels into a cache this project owns.
//!
//! * The pins (versions and sha256 hashes) live in `reftools/wheels.lock`.
//! * The cache is `<workspace>/target/cuda-tools/` (override: `PTXC_TOOLS_DIR`). Provisioning runs
//!   `python3 -m pip download --no-deps --require-hashes`, unzips the wheels into `root/` and
//!   records `versions.txt`. It is idempotent and holds an exclusive lock on `.lock`, so several
//!   test binaries may ask at once.
//! * A user may point at existing binaries with `PTXAS`, `NVDISASM`, `CUOBJDUMP` and `NVCC`.
//! * Tests call [`require`]: only an explicit `PTXC_SKIP_REF_TOOLS=1` makes it return `None` (and
//!   print a visible `SKIPPED` line); otherwise a tool that cannot be had fails the test.

use std::fmt;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The pinned requirements file, compiled in so that the stamp check needs no file access.
pub const WHEELS_LOCK: &str = include_str!("../wheels.lock");

/// One of the reference tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tool {
    Ptxas,
    Nvdisasm,
    Cuobjdump,
    Nvcc,
}

impl Tool {
    pub const ALL: [Tool; 4] = [Tool::Ptxas, Tool::Nvdisasm, Tool::Cuobjdump, Tool::Nvcc];

    /// The executable's file name under `nvidia/cu13/bin`.
    pub fn binary_name(self) -> &'static str {
        match self {
            Tool::Ptxas => "ptxas",
            Tool::Nvdisasm => "nvdisasm",
            Tool::Cuobjdump => "cuobjdump",
            Tool::Nvcc => "nvcc",
        }
    }

    /// The environment variable that overrides the provisioned binary.
    pub fn env_var(self) -> &'static str {
        match self {
            Tool::Ptxas => "PTXAS",
            Tool::Nvdisasm => "NVDISASM",
            Tool::Cuobjdump => "CUOBJDUMP",
            Tool::Nvcc => "NVCC",
        }
    }

    pub fn from_name(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|t| t.binary_name() == name)
    }
}

impl fmt::Display for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.binary_name())
    }
}

/// Why a tool could not be had.
#[derive(Debug)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}\n(ptxc provisions the pinned NVIDIA tools with `python3 -m pip download` into {}; \
             run `cargo run -p ptxc-reftools -- provision` to see the full output, or point \
             PTXAS/NVDISASM/CUOBJDUMP/NVCC at existing binaries)",
            self.0,
            cache_dir().display()
        )
    }
}

impl std::error::Error for Error {}

fn err(msg: impl Into<String>) -> Error {
    Error(msg.into())
}

/// The workspace root, known at compile time.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("reftools lives one level below the workspace root")
        .to_path_buf()
}

/// Where the tools are provisioned: `$PTXC_TOOLS_DIR`, or `<workspace>/target/cuda-tools`.
pub fn cache_dir() -> PathBuf {
    match std::env::var_os("PTXC_TOOLS_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => workspace_root().join("target").join("cuda-tools"),
    }
}

/// A provisioned toolchain: the unpacked wheels.
#[derive(Clone, Debug)]
pub struct Toolchain {
    pub root: PathBuf,
}

impl Toolchain {
    /// The `nvidia/cu13` directory (bin/, nvvm/, include/, lib/).
    pub fn cuda_home(&self) -> PathBuf {
        self.root.join("nvidia").join("cu13")
    }

    pub fn bin(&self, tool: Tool) -> PathBuf {
        self.cuda_home().join("bin").join(tool.binary_name())
    }

    /// The recorded `--version` output of every tool.
    pub fn versions(&self) -> String {
        fs::read_to_string(self.root.join("versions.txt")).unwrap_or_default()
    }
}

/// Provisions the pinned toolchain if it is not there yet and returns it. Safe to call from
/// several processes at once: the work happens under an exclusive file lock.
pub fn provision() -> Result<Toolchain, Error> {
    let dir = cache_dir();
    fs::create_dir_all(&dir).map_err(|e| err(format!("cannot create {}: {e}", dir.display())))?;
    let root = dir.join("root");
    let stamp = root.join("STAMP");
    let lock_path = dir.join(".lock");
    let lock = File::create(&lock_path)
        .map_err(|e| err(format!("cannot create {}: {e}", lock_path.display())))?;
    lock.lock()
        .map_err(|e| err(format!("cannot lock {}: {e}", lock_path.display())))?;

    if fs::read_to_string(&stamp).ok().as_deref() == Some(WHEELS_LOCK) {
        return Ok(Toolchain { root });
    }

    let wheels = dir.join("wheels");
    fs::create_dir_all(&wheels).map_err(|e| err(format!("{}: {e}", wheels.display())))?;
    let requirements = dir.join("wheels.lock");
    fs::write(&requirements, WHEELS_LOCK)
        .map_err(|e| err(format!("{}: {e}", requirements.display())))?;

    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_string());
    run(Command::new(&python)
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--require-hashes",
            "--quiet",
        ])
        .args(["--only-binary=:all:", "--disable-pip-version-check"])
        .arg("--dest")
        .arg(&wheels)
        .arg("-r")
        .arg(&requirements))?;

    let staging = dir.join(format!("root.tmp.{}", std::process::id()));
    let _ = fs::remove_dir_all(&staging);
    fs::create_dir_all(&staging).map_err(|e| err(format!("{}: {e}", staging.display())))?;
    for wheel in pinned_wheel_files(&wheels)? {
        run(Command::new(&python)
            .args(["-m", "zipfile", "-e"])
            .arg(&wheel)
            .arg(&staging))?;
    }
    let staged = Toolchain {
        root: staging.clone(),
    };
    for sub in ["bin", "nvvm/bin"] {
        make_executable(&staged.cuda_home().join(sub))?;
    }
    let mut versions = String::from("# `--version` of each provisioned reference tool\n");
    for tool in Tool::ALL {
        versions.push_str(&format!("{tool}: {}\n", version_line(&staged.bin(tool))?));
    }
    fs::write(staging.join("versions.txt"), versions)
        .map_err(|e| err(format!("cannot write versions.txt: {e}")))?;
    fs::write(staging.join("STAMP"), WHEELS_LOCK)
        .map_err(|e| err(format!("cannot write STAMP: {e}")))?;
    let _ = fs::remove_dir_all(&root);
    fs::rename(&staging, &root)
        .map_err(|e| err(format!("cannot move {}: {e}", staging.display())))?;
    Ok(Toolchain { root })
}

/// The wheel files in `dir` that the lock file names (a stale wheel of another version is ignored).
fn pinned_wheel_files(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut out = Vec::new();
    for line in WHEELS_LOCK.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let spec = line.split_whitespace().next().unwrap_or_default();
        let (name, version) = spec
            .split_once("==")
            .ok_or_else(|| err(format!("malformed pin `{spec}` in wheels.lock")))?;
        let prefix = format!("{}-{}-", name.replace('-', "_"), version);
        let found = fs::read_dir(dir)
            .map_err(|e| err(format!("{}: {e}", dir.display())))?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".whl"))
            })
            .ok_or_else(|| err(format!("pip did not download {spec}")))?;
        out.push(found);
    }
    Ok(out)
}

fn make_executable(dir: &Path) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    let entries = fs::read_dir(dir).map_err(|e| err(format!("{}: {e}", dir.display())))?;
    for entry in entries.filter_map(|e| e.ok()) {
        let path = entry.path();
        if path.is_file() {
            let mut perm = fs::metadata(&path)
                .map_err(|e| err(format!("{}: {e}", path.display())))?
                .permissions();
            perm.set_mode(perm.mode() | 0o755);
            fs::set_permissions(&path, perm)
                .map_err(|e| err(format!("{}: {e}", path.display())))?;
        }
    }
    Ok(())
}

fn run(cmd: &mut Command) -> Result<(), Error> {
    let shown = format!("{cmd:?}");
    let out = cmd
        .output()
        .map_err(|e| err(format!("cannot start {shown}: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(15).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    Err(err(format!(
        "{shown} failed ({}):\n{}",
        out.status,
        tail.join("\n")
    )))
}

/// The path of `tool`: the environment override if set, else the provisioned binary
/// (provisioning on first use).
pub fn find(tool: Tool) -> Result<PathBuf, Error> {
    if let Some(path) = std::env::var_os(tool.env_var()).filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(err(format!(
                "{}={} does not name a file",
                tool.env_var(),
                path.display()
            )))
        };
    }
    let chain = provision()?;
    let path = chain.bin(tool);
    if path.is_file() {
        Ok(path)
    } else {
        Err(err(format!(
            "the provisioned toolchain has no {}",
            path.display()
        )))
    }
}

/// Whether the user explicitly asked to skip everything that needs the reference tools.
pub fn skip_requested() -> bool {
    std::env::var("PTXC_SKIP_REF_TOOLS").is_ok_and(|v| v == "1")
}

/// For tests: the path of `tool`. Returns `None` only when `PTXC_SKIP_REF_TOOLS=1` is set, after
/// printing a visible `SKIPPED` line naming `what`; panics with a clear message when the tool
/// cannot be had.
pub fn require(tool: Tool, what: &str) -> Option<PathBuf> {
    if skip_requested() {
        eprintln!("SKIPPED: {what} (PTXC_SKIP_REF_TOOLS=1; needs {tool})");
        println!("SKIPPED: {what} (PTXC_SKIP_REF_TOOLS=1; needs {tool})");
        return None;
    }
    match find(tool) {
        Ok(path) => Some(path),
        Err(e) => panic!("{what}: the reference tool `{tool}` is needed and could not be had: {e}"),
    }
}

/// `Cuda compilation tools, release 13.1, V13.1.115 (Build …)` for the binary at `path`.
pub fn version_line(path: &Path) -> Result<String, Error> {
    let out = Command::new(path)
        .arg("--version")
        .output()
        .map_err(|e| err(format!("cannot run {}: {e}", path.display())))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let release = text
        .lines()
        .find(|l| l.starts_with("Cuda compilation tools"))
        .unwrap_or("?")
        .trim();
    let build = text.lines().last().unwrap_or("?").trim();
    Ok(format!("{release} ({build})"))
}

/// The `--version` lines of the tools in use, for recording next to golden files.
pub fn versions_summary() -> Result<String, Error> {
    let mut out = String::new();
    for tool in Tool::ALL {
        out.push_str(&format!("{tool}: {}\n", version_line(&find(tool)?)?));
    }
    Ok(out)
}
