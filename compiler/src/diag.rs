//! Diagnostics: `FILE:LINE:COL: error: MESSAGE`, then the source line and a caret under the
//! offending text, the way clang and rustc show them.

use crate::frontend::ast::Span;
use std::fmt::Write as _;
use std::sync::OnceLock;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
    Note,
}

impl Severity {
    fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

/// One message about the input, pointing at a span of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub span: Span,
    pub message: String,
    /// Further lines, each optionally pointing somewhere (e.g. "previous definition is here").
    pub notes: Vec<(Option<Span>, String)>,
}

impl Diagnostic {
    pub fn error(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            span,
            message: message.into(),
            notes: Vec::new(),
        }
    }

    pub fn warning(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(span, message)
        }
    }

    pub fn with_note(mut self, span: Option<Span>, note: impl Into<String>) -> Diagnostic {
        self.notes.push((span, note.into()));
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// A source file's text: a string, or a large file's bytes mapped from the page cache
/// ([`SourceText::map`]).
pub struct SourceText {
    repr: TextRepr,
}

enum TextRepr {
    Owned(String),
    /// A private read-only mapping of a whole file, checked to be UTF-8 when it was made.
    Mapped {
        ptr: *const u8,
        len: usize,
    },
}

// SAFETY: the mapping is read-only and owned by the `SourceText` alone (unmapped on drop).
unsafe impl Send for SourceText {}
// SAFETY: as above; nothing writes through it.
unsafe impl Sync for SourceText {}

impl SourceText {
    /// The smallest file [`SourceText::map`] maps (smaller ones are read).
    pub const MAP_MIN: u64 = 128 << 10;

    /// The text of `file` (a regular file of `len` bytes, at least [`Self::MAP_MIN`]) mapped
    /// from the page cache (`mmap(MAP_PRIVATE | MAP_POPULATE)`), if it is UTF-8 and the mapping
    /// succeeds; `None` otherwise (the caller reads the file instead).
    ///
    /// Reading a file copies it into fresh pages, and each fresh 4 KiB page is a page fault:
    /// a 1.95 MB PTX file (straight-line 64k) cost 476 of the compiling thread's ~2 900 faults.
    /// Mapping it uses the page cache's own pages, all at once, with no copy.
    ///
    /// As with any mapped file (clang maps large sources the same way), the text is only as
    /// stable as the file: a file truncated while ptxc runs would make reading the lost part a
    /// `SIGBUS`, which [`catch_truncation`] turns into an error message and exit status 1.
    pub fn map(file: &std::fs::File, len: u64) -> Option<SourceText> {
        use std::os::fd::AsRawFd;
        if len < Self::MAP_MIN {
            return None;
        }
        let len = usize::try_from(len).ok()?;
        // SAFETY: a new private read-only mapping of an open file; no existing memory changes.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_POPULATE,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return None;
        }
        let text = SourceText {
            repr: TextRepr::Mapped {
                ptr: ptr as *const u8,
                len,
            },
        };
        // SAFETY: the mapping holds `len` readable bytes while `text` lives.
        let bytes = unsafe { std::slice::from_raw_parts(ptr as *const u8, len) };
        // Other bytes than UTF-8 are decoded lossily by the caller (dropping `text` unmaps).
        std::str::from_utf8(bytes).is_ok().then_some(text)
    }
}

impl From<String> for SourceText {
    fn from(s: String) -> SourceText {
        SourceText {
            repr: TextRepr::Owned(s),
        }
    }
}

impl std::ops::Deref for SourceText {
    type Target = str;
    fn deref(&self) -> &str {
        match &self.repr {
            TextRepr::Owned(s) => s,
            // SAFETY: the mapping lives as long as `self`, and was checked to be UTF-8.
            TextRepr::Mapped { ptr, len } => unsafe {
                std::str::from_utf8_unchecked(std::slice::from_raw_parts(*ptr, *len))
            },
        }
    }
}

impl Drop for SourceText {
    fn drop(&mut self) {
        if let TextRepr::Mapped { ptr, len } = self.repr {
            // SAFETY: the mapping is this value's, and no reference into it outlives it.
            unsafe { libc::munmap(ptr as *mut libc::c_void, len) };
        }
    }
}

impl std::fmt::Debug for SourceText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

/// Turns a `SIGBUS` (what reading a mapped file's pages gives after the file was truncated)
/// into `ptxc: error: ...` and exit status 1, for a process that maps its input
/// ([`SourceText::map`]). Output files are written atomically at the end, after the last read
/// of the text, so no partial output is left behind.
pub fn catch_truncation() {
    extern "C" fn on_sigbus(_: libc::c_int) {
        const MSG: &[u8] = b"ptxc: error: the input file changed while ptxc was reading it\n";
        // SAFETY: `write` and `_exit` are async-signal-safe.
        unsafe {
            libc::write(2, MSG.as_ptr().cast(), MSG.len());
            libc::_exit(1);
        }
    }
    // SAFETY: installs a handler that only calls async-signal-safe functions.
    unsafe {
        libc::signal(
            libc::SIGBUS,
            on_sigbus as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
}

/// A source file with a line index, for turning byte offsets into `line:column`.
#[derive(Clone, Debug)]
pub struct SourceFile {
    pub name: String,
    /// The text, shared with the checked module ([`crate::driver::Checked::source`]) without a
    /// copy.
    pub text: std::sync::Arc<SourceText>,
    /// The byte offset where each line starts, built on the first diagnostic that needs it
    /// ([`Self::line_starts`]): a file that compiles cleanly never needs it (at 64k PTX lines
    /// it was a 512 KiB vector and a scan of the whole text on every compile).
    line_starts: OnceLock<Vec<usize>>,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> SourceFile {
        SourceFile::from_text(name, SourceText::from(text.into()))
    }

    /// A file whose text is already a [`SourceText`] (a mapped file).
    pub fn from_text(name: impl Into<String>, text: SourceText) -> SourceFile {
        SourceFile {
            name: name.into(),
            text: std::sync::Arc::new(text),
            line_starts: OnceLock::new(),
        }
    }

    /// The byte offset where each line starts (the first is 0).
    fn line_starts(&self) -> &[usize] {
        self.line_starts.get_or_init(|| {
            let mut starts = vec![0];
            starts.extend(self.text.match_indices('\n').map(|(i, _)| i + 1));
            starts
        })
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: u32) -> (usize, usize) {
        let offset = (offset as usize).min(self.text.len());
        let line_starts = self.line_starts();
        let line = line_starts.partition_point(|&s| s <= offset) - 1;
        let start = line_starts[line];
        let col = self.text[start..floor_char_boundary(&self.text, offset)]
            .chars()
            .count();
        (line + 1, col + 1)
    }

    /// The text of a 1-based line, without its newline.
    pub fn line_text(&self, line: usize) -> &str {
        let line_starts = self.line_starts();
        let start = line_starts[line - 1];
        let end = line_starts.get(line).map_or(self.text.len(), |&e| e - 1);
        self.text[start..end].trim_end_matches('\r')
    }

    /// Renders a diagnostic: the header line, the source line and a caret line.
    pub fn render(&self, d: &Diagnostic) -> String {
        let mut out = String::new();
        let (line, col) = self.line_col(d.span.start);
        let _ = writeln!(
            out,
            "{}:{}:{}: {}: {}",
            self.name,
            line,
            col,
            d.severity.as_str(),
            d.message
        );
        self.snippet(&mut out, d.span);
        for (span, note) in &d.notes {
            match span {
                Some(s) => {
                    let (l, c) = self.line_col(s.start);
                    let _ = writeln!(out, "{}:{}:{}: note: {}", self.name, l, c, note);
                    self.snippet(&mut out, *s);
                }
                None => {
                    let _ = writeln!(out, "note: {note}");
                }
            }
        }
        out
    }

    /// The source line and the caret line under it. A line longer than [`SNIPPET_WIDTH`]
    /// characters (a `wgmma` with 64 accumulator registers is 600) is shown as a window
    /// around the error's column, elided with `...` on the sides that are cut, and the `~`
    /// run is cut at the window's end.
    fn snippet(&self, out: &mut String, span: Span) {
        let (line, col) = self.line_col(span.start);
        let text = self.line_text(line);
        let gutter = line.to_string().len().max(3);
        let chars: Vec<char> = text.chars().collect();
        let at = (col - 1).min(chars.len());
        let (from, to) = if chars.len() <= SNIPPET_WIDTH {
            (0, chars.len())
        } else {
            let from = at.saturating_sub(SNIPPET_LEAD);
            (from, (from + SNIPPET_WIDTH).min(chars.len()))
        };
        let shown: String = chars[from..to].iter().collect();
        let (lead, tail) = (
            if from > 0 { "..." } else { "" },
            if to < chars.len() { "..." } else { "" },
        );
        let _ = writeln!(out, "{line:>gutter$} | {lead}{shown}{tail}");
        // The caret line copies tabs so that the caret lines up however tabs are shown.
        let mut marker: String = lead.chars().map(|_| ' ').collect();
        marker.extend(
            chars[from..at]
                .iter()
                .map(|&c| if c == '\t' { '\t' } else { ' ' }),
        );
        let (end_line, end_col) = self.line_col(span.end);
        let width = if end_line == line && end_col > col {
            (end_col - col).min(to.saturating_sub(at)).max(1)
        } else {
            1
        };
        marker.push('^');
        marker.extend(std::iter::repeat_n('~', width - 1));
        let _ = writeln!(out, "{:>gutter$} | {marker}", "");
    }
}

/// The most characters of a source line a snippet shows.
const SNIPPET_WIDTH: usize = 120;
/// How many characters before the error's column a cut snippet keeps.
const SNIPPET_LEAD: usize = 40;

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_files_are_mapped_small_and_non_utf8_ones_are_not() {
        let dir = std::env::temp_dir().join(format!("ptxc-map-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, bytes: &[u8]| {
            let path = dir.join(name);
            std::fs::write(&path, bytes).unwrap();
            let file = std::fs::File::open(&path).unwrap();
            let len = file.metadata().unwrap().len();
            SourceText::map(&file, len)
        };
        let line = "\tadd.s32 \t%r1, %r2, %r3;\n";
        let big: String = line.repeat((SourceText::MAP_MIN as usize).div_ceil(line.len()));
        let mapped = write("big.ptx", big.as_bytes()).expect("a large UTF-8 file is mapped");
        assert!(matches!(mapped.repr, TextRepr::Mapped { .. }));
        assert_eq!(&*mapped, big.as_str(), "the mapping reads as the file");
        // The text outlives the file's handle, and is shared like any text.
        let src = SourceFile::from_text("big.ptx", mapped);
        assert_eq!(src.text.lines().nth(3), Some(line.trim_end()));
        assert!(
            write("small.ptx", line.as_bytes()).is_none(),
            "small files are read"
        );
        let mut bad = big.clone().into_bytes();
        bad.push(0xff);
        assert!(
            write("bad.ptx", &bad).is_none(),
            "non-UTF-8 bytes are read and decoded"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A mapped file truncated under ptxc: reading the lost pages is an error message and exit
    /// status 1, not a crash. Runs itself again as a child process (the handler ends it).
    #[test]
    fn a_truncated_mapped_file_is_an_error_not_a_crash() {
        const CHILD: &str = "PTXC_TRUNCATION_CHILD";
        if let Some(path) = std::env::var_os(CHILD) {
            let file = std::fs::File::open(&path).unwrap();
            let text = SourceText::map(&file, file.metadata().unwrap().len()).unwrap();
            catch_truncation();
            std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .unwrap()
                .set_len(0)
                .unwrap();
            // The pages are gone: this read raises SIGBUS.
            let last = text.as_bytes()[text.len() - 1];
            std::process::exit(i32::from(last) + 10);
        }
        let path = std::env::temp_dir().join(format!("ptxc-trunc-{}.ptx", std::process::id()));
        std::fs::write(&path, "a".repeat(SourceText::MAP_MIN as usize + 4096)).unwrap();
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "diag::tests::a_truncated_mapped_file_is_an_error_not_a_crash",
                "--nocapture",
            ])
            .env(CHILD, &path)
            .output()
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains("ptxc: error: the input file changed while ptxc was reading it"),
            "{stderr}"
        );
    }

    #[test]
    fn renders_file_line_col_and_caret() {
        let f = SourceFile::new("k.ptx", "line one\n\tfoo.u32 %r1;\n");
        let d = Diagnostic::error(Span::new(10, 13), "unknown opcode `foo`");
        assert_eq!(
            f.render(&d),
            "k.ptx:2:2: error: unknown opcode `foo`\n  2 | \tfoo.u32 %r1;\n    | \t^~~\n"
        );
    }

    #[test]
    fn long_lines_are_shown_as_a_window_around_the_column() {
        let operands: Vec<String> = (0..200).map(|k| format!("%r{k}")).collect();
        let line = format!("\twgmma.x {{{}}}, %rd1;", operands.join(","));
        let start = line.find("%r150").unwrap();
        let f = SourceFile::new("w.ptx", format!("{line}\n"));
        let d = Diagnostic::error(Span::new(start, line.len()), "bad operand");
        let r = f.render(&d);
        let lines: Vec<&str> = r.lines().collect();
        assert_eq!(
            lines[0],
            format!("w.ptx:1:{}: error: bad operand", start + 1)
        );
        // 120 characters of source between the elisions, starting 40 before the column.
        let shown = lines[1].strip_prefix("  1 | ...").unwrap();
        let shown = shown.strip_suffix("...").unwrap_or(shown);
        assert!(shown.chars().count() <= SNIPPET_WIDTH);
        assert_eq!(&shown[40..45], "%r150");
        // The caret sits under the column, and the `~` run stops at the window's end.
        let marker = lines[2].strip_prefix("    | ").unwrap();
        assert_eq!(marker.find('^'), Some(3 + 40));
        assert!(marker.chars().count() <= 3 + SNIPPET_WIDTH);
        // A short line is shown whole.
        let f = SourceFile::new("s.ptx", "\tadd.u32 %r1, %r2;\n");
        let r = f.render(&Diagnostic::error(Span::new(10, 13), "x"));
        assert!(
            r.contains("  1 | \tadd.u32 %r1, %r2;\n    | \t         ^~~\n"),
            "{r}"
        );
    }

    #[test]
    fn end_of_file_positions() {
        let f = SourceFile::new("e.ptx", "");
        assert_eq!(f.line_col(0), (1, 1));
        let f = SourceFile::new("e.ptx", "a\nb");
        assert_eq!(f.line_col(3), (2, 2));
        assert_eq!(f.line_col(99), (2, 2));
    }

    #[test]
    fn the_line_index_is_built_only_for_a_diagnostic() {
        let f = SourceFile::new("l.ptx", "a\nbc\r\nd");
        assert!(f.line_starts.get().is_none());
        assert_eq!(f.line_col(4), (2, 3));
        assert_eq!(f.line_starts.get().map(Vec::as_slice), Some(&[0, 2, 6][..]));
        assert_eq!(f.line_text(2), "bc");
        // A clone carries the index along.
        assert_eq!(f.clone().line_text(3), "d");
    }
}
