//! Attachments: the store under `<state>/attachments/`, classification by
//! extension, the choice of engine for a set of attachments, and private file
//! ranges (exact line windows delivered with the prompt, persisted nowhere).
//!
//! Which engine accepts which kind, and with which flag, is the engine
//! contract's business (`Spec::attachment_kinds`, `Engine::build`); this
//! module only selects, resolves paths and explains its choice.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;

use serde::Serialize;
use serde_json::Value;

use crate::engine::{self, AttachmentKind, EngineId, Invocation};
use crate::error::{Result, VfError};
use crate::names;

/// Sub-directory of the state dir holding attachments.
pub const DIR_NAME: &str = "attachments";

/// Larger files are refused: no engine takes attachments this size, and
/// `add` holds the file in memory while checking it.
pub const MAX_ATTACHMENT_BYTES: u64 = 64 * 1024 * 1024;

/// Extensions (lower-case, compared case-insensitively) classified as text.
/// Text attachments must be UTF-8: they are read as text by the engines.
#[rustfmt::skip]
pub const TEXT_EXTENSIONS: &[&str] = &[
    "txt", "text", "md", "markdown", "mdx", "rst", "adoc", "asciidoc", "org", "tex", "csv",
    "tsv", "json", "jsonl", "ndjson", "json5", "yaml", "yml", "toml", "xml", "html", "htm",
    "css", "scss", "sass", "less", "log", "ini", "cfg", "conf", "properties", "env", "sql",
    "graphql", "gql", "proto", "diff", "patch", "sh", "bash", "zsh", "fish", "ps1", "bat",
    "cmd", "py", "pyi", "rb", "pl", "pm", "php", "lua", "r", "jl", "rs", "go", "c", "h", "cc",
    "cpp", "cxx", "hh", "hpp", "hxx", "m", "mm", "cs", "fs", "java", "kt", "kts", "scala",
    "groovy", "gradle", "clj", "cljs", "edn", "ex", "exs", "erl", "hrl", "hs", "ml", "mli",
    "elm", "dart", "swift", "zig", "nim", "v", "sv", "vhd", "js", "mjs", "cjs", "jsx", "ts",
    "mts", "cts", "tsx", "vue", "svelte", "astro", "tf", "tfvars", "hcl", "nix", "cmake", "mk",
    "make", "dockerfile", "lock", "sum", "mod", "gitignore", "editorconfig",
];

/// Extension-less file names classified as text.
pub const TEXT_FILE_NAMES: &[&str] = &[
    "Makefile",
    "makefile",
    "GNUmakefile",
    "Dockerfile",
    "Containerfile",
    "Justfile",
    "justfile",
    "Gemfile",
    "Rakefile",
    "Procfile",
    "Vagrantfile",
    "CODEOWNERS",
    "LICENSE",
    "README",
    "CHANGELOG",
    "AUTHORS",
    "NOTICE",
    "COPYING",
];

/// Raster image formats the vision-capable CLIs accept.
pub const IMAGE_EXTENSIONS: &[&str] = &["png", "jpg", "jpeg", "gif", "webp"];

/// Binary documents (passed as files, never read as text by vf).
#[rustfmt::skip]
pub const DOCUMENT_EXTENSIONS: &[&str] = &[
    "pdf", "doc", "docx", "odt", "rtf", "xls", "xlsx", "ods", "ppt", "pptx", "odp", "epub",
];

/// Classifies a file name by its extension (case-insensitive).
pub fn classify(file_name: &str) -> Result<AttachmentKind> {
    if TEXT_FILE_NAMES.contains(&file_name) {
        return Ok(AttachmentKind::Text);
    }
    let ext = match file_name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && !ext.is_empty() => ext.to_ascii_lowercase(),
        _ => {
            return Err(VfError::usage(format!(
                "cannot classify {file_name:?}: it has no extension (name it e.g. `notes.md`, \
                 `shot.png` or `spec.pdf`; see docs/ATTACH.md for the lists)"
            )));
        }
    };
    kind_of_extension(&ext).ok_or_else(|| {
        VfError::usage(format!(
            "cannot classify {file_name:?}: `.{ext}` is not a known text, image or document \
             extension (images: {}; documents: {}; text: see docs/ATTACH.md)",
            IMAGE_EXTENSIONS.join(", "),
            DOCUMENT_EXTENSIONS.join(", ")
        ))
    })
}

fn kind_of_extension(ext: &str) -> Option<AttachmentKind> {
    if TEXT_EXTENSIONS.contains(&ext) {
        Some(AttachmentKind::Text)
    } else if IMAGE_EXTENSIONS.contains(&ext) {
        Some(AttachmentKind::Image)
    } else if DOCUMENT_EXTENSIONS.contains(&ext) {
        Some(AttachmentKind::Document)
    } else {
        None
    }
}

/// The kind a file name's extension implies, if it implies one.
fn kind_hint(file_name: &str) -> Option<AttachmentKind> {
    classify(file_name).ok()
}

/// One stored attachment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub name: String,
    pub kind: AttachmentKind,
    pub bytes: u64,
    /// Absolute path in the store.
    pub path: PathBuf,
}

/// The attachment store: `<state>/attachments/<name>`.
pub struct Store {
    dir: PathBuf,
}

impl Store {
    pub fn new(state_dir: &Path) -> Store {
        Store {
            dir: state_dir.join(DIR_NAME),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Copies `src` into the store under `name` (default: `src`'s file name).
    /// The copy is atomic: a temp file in the store dir, then a rename, so a
    /// reader never sees a half-written attachment.
    pub fn add(&self, src: &Path, name: Option<&str>, force: bool) -> Result<Entry> {
        let name = match name {
            Some(n) => {
                names::check("attachment name", n)?;
                n.to_string()
            }
            None => {
                let derived = src.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
                    VfError::usage(format!(
                        "cannot derive an attachment name from {}; pass --name NAME",
                        src.display()
                    ))
                })?;
                names::check("attachment name", derived).map_err(|e| {
                    VfError::usage(format!("{e} (pass --name NAME to choose another name)"))
                })?;
                derived.to_string()
            }
        };
        let kind = classify(&name)?;
        if let Some(src_kind) = src.file_name().and_then(|n| n.to_str()).and_then(kind_hint)
            && src_kind != kind
        {
            return Err(VfError::usage(format!(
                "{} is {} by its extension but the name {name:?} says {}; keep the kinds the same",
                src.display(),
                article(src_kind),
                kind.as_str()
            )));
        }
        let meta = std::fs::metadata(src)
            .map_err(|e| VfError::usage(format!("cannot read {}: {e}", src.display())))?;
        if !meta.is_file() {
            return Err(VfError::usage(format!(
                "{} is not a regular file",
                src.display()
            )));
        }
        if meta.len() > MAX_ATTACHMENT_BYTES {
            return Err(VfError::usage(format!(
                "{} is {} bytes; attachments are limited to {} MiB",
                src.display(),
                meta.len(),
                MAX_ATTACHMENT_BYTES / (1024 * 1024)
            )));
        }
        let bytes = std::fs::read(src)
            .map_err(|e| VfError::usage(format!("cannot read {}: {e}", src.display())))?;
        if kind == AttachmentKind::Text {
            check_text(&bytes, &src.display().to_string())?;
        }
        let dest = self.dir.join(&name);
        if !force && dest.exists() {
            return Err(exists_error(&name));
        }
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| VfError::state(format!("cannot create {}: {e}", self.dir.display())))?;
        // Temp names start with `.`, which no attachment name may, so `list`
        // can never mistake a leftover for an attachment.
        let mut tmp = tempfile::Builder::new()
            .prefix(".tmp-")
            .tempfile_in(&self.dir)
            .map_err(|e| VfError::state(format!("cannot write in {}: {e}", self.dir.display())))?;
        tmp.write_all(&bytes)
            .and_then(|_| tmp.as_file().sync_all())
            .map_err(|e| VfError::state(format!("cannot write {}: {e}", dest.display())))?;
        let persisted = if force {
            tmp.persist(&dest)
        } else {
            // Refuses atomically if another writer created the name meanwhile.
            tmp.persist_noclobber(&dest)
        };
        if let Err(e) = persisted {
            return Err(if e.error.kind() == std::io::ErrorKind::AlreadyExists {
                exists_error(&name)
            } else {
                VfError::state(format!("cannot write {}: {}", dest.display(), e.error))
            });
        }
        Ok(Entry {
            name,
            kind,
            bytes: bytes.len() as u64,
            path: dest,
        })
    }

    /// The named attachment; a clear error when it is not there.
    pub fn get(&self, name: &str) -> Result<Entry> {
        names::check("attachment name", name)?;
        let path = self.dir.join(name);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_file() => Ok(Entry {
                name: name.to_string(),
                kind: classify(name)?,
                bytes: m.len(),
                path,
            }),
            Ok(_) => Err(VfError::usage(format!(
                "{} is not a regular file",
                path.display()
            ))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(VfError::usage(format!(
                "no attachment named {name:?} (see `vf attach list`)"
            ))),
            Err(e) => Err(VfError::state(format!(
                "cannot read {}: {e}",
                path.display()
            ))),
        }
    }

    /// All attachments, sorted by name. Files that are not valid attachments
    /// (leftover temp files, hand-placed oddities) are skipped.
    pub fn list(&self) -> Result<Vec<Entry>> {
        let rd = match std::fs::read_dir(&self.dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(VfError::state(format!(
                    "cannot read {}: {e}",
                    self.dir.display()
                )));
            }
        };
        let mut out = Vec::new();
        for ent in rd {
            let ent = ent
                .map_err(|e| VfError::state(format!("cannot read {}: {e}", self.dir.display())))?;
            let Some(name) = ent.file_name().to_str().map(str::to_string) else {
                continue;
            };
            if name.starts_with('.') {
                continue;
            }
            match self.get(&name) {
                Ok(e) => out.push(e),
                Err(e) => tracing::warn!("skipping {}: {e}", ent.path().display()),
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    pub fn remove(&self, name: &str) -> Result<Entry> {
        let entry = self.get(name)?;
        std::fs::remove_file(&entry.path)
            .map_err(|e| VfError::state(format!("cannot remove {}: {e}", entry.path.display())))?;
        Ok(entry)
    }
}

fn exists_error(name: &str) -> VfError {
    VfError::usage(format!(
        "an attachment named {name:?} already exists; pass --force to replace it"
    ))
}

fn article(k: AttachmentKind) -> &'static str {
    match k {
        AttachmentKind::Text => "text",
        AttachmentKind::Image => "an image",
        AttachmentKind::Document => "a document",
    }
}

/// Text must be UTF-8 without NUL bytes (a NUL means a binary file).
fn check_text<'b>(bytes: &'b [u8], what: &str) -> Result<&'b str> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        VfError::usage(format!(
            "{what} is not valid UTF-8 text (invalid byte at offset {})",
            e.valid_up_to()
        ))
    })?;
    if text.contains('\0') {
        return Err(VfError::usage(format!(
            "{what} contains NUL bytes; it is not a text file"
        )));
    }
    Ok(text)
}

// ---------------------------------------------------------------------------
// Engine choice

/// `--engine`: one engine, or `auto` (chosen from the attachments' kinds and
/// the engines' readiness).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineChoice {
    Auto,
    Engine(EngineId),
}

impl EngineChoice {
    const ALL: [EngineChoice; 7] = [
        EngineChoice::Auto,
        EngineChoice::Engine(EngineId::Claude),
        EngineChoice::Engine(EngineId::Codex),
        EngineChoice::Engine(EngineId::Copilot),
        EngineChoice::Engine(EngineId::Opencode),
        EngineChoice::Engine(EngineId::Gemini),
        EngineChoice::Engine(EngineId::Agy),
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EngineChoice::Auto => "auto",
            EngineChoice::Engine(e) => e.as_str(),
        }
    }
}

impl fmt::Display for EngineChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl clap::ValueEnum for EngineChoice {
    fn value_variants<'a>() -> &'a [Self] {
        &Self::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let v = clap::builder::PossibleValue::new(self.as_str());
        Some(match self {
            EngineChoice::Auto => v.help("the first ready engine that accepts every attached kind"),
            EngineChoice::Engine(_) => v,
        })
    }
}

/// A native session id belongs to one engine: resuming needs that engine named.
pub fn check_session_choice(choice: EngineChoice, session: Option<&str>) -> Result<()> {
    if choice == EngineChoice::Auto && session.is_some() {
        return Err(VfError::usage(
            "--session resumes one engine's session: name the engine with --engine instead of auto",
        ));
    }
    Ok(())
}

/// Whether an engine is ready to run here: `Some(true)` ready, `Some(false)`
/// not ready, `None` unknown (not checked).
pub type Readiness<'a> = &'a dyn Fn(EngineId) -> Option<bool>;

/// Readiness when nothing has been checked (e.g. `--dry-run`).
pub fn unknown_readiness(_: EngineId) -> Option<bool> {
    None
}

/// The engine a dispatch will use and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pick {
    pub engine: EngineId,
    /// One sentence for `engineReason`.
    pub reason: String,
    /// The chosen engine's readiness as the caller reported it. Readiness gates
    /// the dispatch itself, not the plan: `Some(false)` must stop a real run.
    pub ready: Option<bool>,
}

/// Engines that accept `kind`, in support-matrix order.
pub fn accepting(kind: AttachmentKind) -> Vec<EngineId> {
    EngineId::ALL
        .into_iter()
        .filter(|e| e.engine().spec().attachment_kinds.contains(&kind))
        .collect()
}

fn engine_list(es: &[EngineId]) -> String {
    if es.is_empty() {
        "none".to_string()
    } else {
        es.iter().map(|e| e.as_str()).collect::<Vec<_>>().join(", ")
    }
}

/// The distinct kinds among `kinds`, in a stable order (text, image, document).
fn distinct(kinds: &[AttachmentKind]) -> Vec<AttachmentKind> {
    [
        AttachmentKind::Text,
        AttachmentKind::Image,
        AttachmentKind::Document,
    ]
    .into_iter()
    .filter(|k| kinds.contains(k))
    .collect()
}

/// Refuses, before anything is spawned, a kind `engine` does not accept,
/// naming the engines that would (same wording as `engine::check_request`).
pub fn check_engine_accepts(engine: EngineId, kinds: &[AttachmentKind]) -> Result<()> {
    let spec = engine.engine().spec();
    for k in distinct(kinds) {
        if !spec.attachment_kinds.contains(&k) {
            return Err(VfError::usage(format!(
                "{engine}: {} attachments are not supported (engines that accept them: {})",
                k.as_str(),
                engine_list(&accepting(k))
            )));
        }
    }
    Ok(())
}

/// Chooses the engine for attachments of `kinds`.
///
/// An explicit engine must accept every kind. `auto` considers the engines
/// that accept every selected kind, in support-matrix order (`EngineId::ALL`),
/// and takes the first one reported ready; when none is known to be ready,
/// the first whose readiness is unknown; when all are known not ready, the
/// first candidate (with `ready: Some(false)`, so the dispatch is refused).
pub fn choose_engine(
    choice: EngineChoice,
    kinds: &[AttachmentKind],
    is_ready: Readiness<'_>,
) -> Result<Pick> {
    let kinds = distinct(kinds);
    if let EngineChoice::Engine(e) = choice {
        check_engine_accepts(e, &kinds)?;
        return Ok(Pick {
            engine: e,
            reason: "chosen with --engine".to_string(),
            ready: is_ready(e),
        });
    }
    let candidates: Vec<EngineId> = EngineId::ALL
        .into_iter()
        .filter(|e| check_engine_accepts(*e, &kinds).is_ok())
        .collect();
    let what = match kinds.as_slice() {
        [] => "engines (nothing attached)".to_string(),
        [k] => format!("engines that accept {} attachments", k.as_str()),
        ks => format!(
            "engines that accept every attached kind ({})",
            ks.iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .join(" + ")
        ),
    };
    if candidates.is_empty() {
        let per_kind: Vec<String> = kinds
            .iter()
            .map(|k| format!("{}: {}", k.as_str(), engine_list(&accepting(*k))))
            .collect();
        return Err(VfError::usage(format!(
            "--engine auto: no engine accepts every attached kind ({}); attach fewer kinds \
             or dispatch them separately",
            per_kind.join("; ")
        )));
    }
    let readiness: Vec<(EngineId, Option<bool>)> =
        candidates.iter().map(|e| (*e, is_ready(*e))).collect();
    let not_ready: Vec<EngineId> = readiness
        .iter()
        .filter(|(_, r)| *r == Some(false))
        .map(|(e, _)| *e)
        .collect();
    let skipped = if not_ready.is_empty() {
        String::new()
    } else {
        format!(" ({} not ready)", engine_list(&not_ready))
    };
    if let Some((e, _)) = readiness.iter().find(|(_, r)| *r == Some(true)) {
        return Ok(Pick {
            engine: *e,
            reason: format!("auto: {e} is the first ready one of the {what}{skipped}"),
            ready: Some(true),
        });
    }
    if let Some((e, _)) = readiness.iter().find(|(_, r)| r.is_none()) {
        return Ok(Pick {
            engine: *e,
            reason: format!(
                "auto: {e} is the first of the {what} in the support matrix \
                 (readiness not checked){skipped}"
            ),
            ready: None,
        });
    }
    let e = candidates[0];
    Ok(Pick {
        engine: e,
        reason: format!(
            "auto: none of the {what} is ready ({}); {e} is the first in the support matrix",
            engine_list(&candidates)
        ),
        ready: Some(false),
    })
}

/// The path handed to an engine: relative to its working dir when the file
/// lies below it, absolute otherwise.
pub fn engine_path(path: &Path, cwd: &Path) -> PathBuf {
    match path.strip_prefix(cwd) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.to_path_buf(),
        _ => path.to_path_buf(),
    }
}

/// The engine-contract form of the selected attachments.
pub fn engine_attachments(entries: &[Entry], cwd: &Path) -> Vec<engine::Attachment> {
    entries
        .iter()
        .map(|e| engine::Attachment {
            kind: e.kind,
            path: engine_path(&e.path, cwd),
        })
        .collect()
}

/// The attachment side of a dispatch plan.
#[derive(Debug, Clone)]
pub struct Plan {
    pub pick: Pick,
    /// The selected attachments, in the order given.
    pub selected: Vec<Entry>,
    /// What the engine receives (paths relative to `cwd` where possible).
    pub attachments: Vec<engine::Attachment>,
}

/// Resolves `names` from the store and chooses the engine for them.
pub fn plan(
    choice: EngineChoice,
    names: &[String],
    state_dir: &Path,
    cwd: &Path,
    is_ready: Readiness<'_>,
) -> Result<Plan> {
    let store = Store::new(state_dir);
    let mut selected: Vec<Entry> = Vec::with_capacity(names.len());
    for n in names {
        if selected.iter().any(|e| &e.name == n) {
            return Err(VfError::usage(format!("--attach {n:?} is given twice")));
        }
        selected.push(store.get(n)?);
    }
    let kinds: Vec<AttachmentKind> = selected.iter().map(|e| e.kind).collect();
    let pick = choose_engine(choice, &kinds, is_ready)?;
    let attachments = engine_attachments(&selected, cwd);
    Ok(Plan {
        pick,
        selected,
        attachments,
    })
}

// ---------------------------------------------------------------------------
// Private file ranges

/// The first line of the wire form; the canonical JSON follows on the next.
pub const PRIVATE_RANGES_HEADER: &str = "VF-PRIVATE-FILE-RANGES/1";

/// `FILE:START-END` as given on the command line (syntax only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeSpec {
    pub file: String,
    /// 1-based, inclusive.
    pub start: usize,
    pub end: usize,
}

impl FromStr for RangeSpec {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let syntax = || format!("{s:?} is not FILE:START-END (1-based inclusive line numbers)");
        let (file, range) = s.rsplit_once(':').ok_or_else(syntax)?;
        let (a, b) = range.split_once('-').ok_or_else(syntax)?;
        let num = |t: &str| -> std::result::Result<usize, String> {
            if t.is_empty() || !t.bytes().all(|c| c.is_ascii_digit()) {
                return Err(syntax());
            }
            t.parse::<usize>()
                .map_err(|_| format!("line number {t} in {s:?} is too large"))
        };
        let (start, end) = (num(a)?, num(b)?);
        if file.is_empty() {
            return Err(format!("{s:?} names no file"));
        }
        if start == 0 {
            return Err(format!("{s:?}: line numbers start at 1"));
        }
        if start > end {
            return Err(format!("{s:?}: START {start} is after END {end}"));
        }
        Ok(RangeSpec {
            file: file.to_string(),
            start,
            end,
        })
    }
}

impl fmt::Display for RangeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}-{}", self.file, self.start, self.end)
    }
}

/// A staged line window. Deliberately neither `Serialize` nor a `Debug` that
/// shows the text: the text must not reach markers, events or logs.
pub struct PrivateRange {
    file: String,
    start: usize,
    end: usize,
    text: String,
}

impl fmt::Debug for PrivateRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrivateRange")
            .field("file", &self.file)
            .field("start", &self.start)
            .field("end", &self.end)
            .field("bytes", &self.text.len())
            .finish_non_exhaustive()
    }
}

/// What may be shown about a staged range: everything but the text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RangeSummary {
    pub file: String,
    pub start: usize,
    pub end: usize,
    pub bytes: usize,
}

/// The ranges staged for one dispatch.
#[derive(Default)]
pub struct PrivateRanges {
    ranges: Vec<PrivateRange>,
}

impl fmt::Debug for PrivateRanges {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.ranges).finish()
    }
}

impl PrivateRanges {
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    pub fn summaries(&self) -> Vec<RangeSummary> {
        self.ranges
            .iter()
            .map(|r| RangeSummary {
                file: r.file.clone(),
                start: r.start,
                end: r.end,
                bytes: r.text.len(),
            })
            .collect()
    }

    /// `VF-PRIVATE-FILE-RANGES/1`, a newline, then canonical JSON: an array
    /// (in the order given) of objects with sorted keys `end`, `file`,
    /// `start`, `text`, without insignificant whitespace. Empty when no
    /// range is staged.
    pub fn wire(&self) -> String {
        if self.ranges.is_empty() {
            return String::new();
        }
        // BTreeMap keeps keys sorted whatever serde_json's map features are.
        let items: Vec<BTreeMap<&str, Value>> = self
            .ranges
            .iter()
            .map(|r| {
                BTreeMap::from([
                    ("end", Value::from(r.end)),
                    ("file", Value::from(r.file.as_str())),
                    ("start", Value::from(r.start)),
                    ("text", Value::from(r.text.as_str())),
                ])
            })
            .collect();
        let json = serde_json::to_string(&items).expect("strings and integers always serialize");
        format!("{PRIVATE_RANGES_HEADER}\n{json}")
    }

    /// What stands in for the wire form wherever it would be shown.
    pub fn placeholder(&self) -> String {
        let bytes: usize = self.ranges.iter().map(|r| r.text.len()).sum();
        format!(
            "{PRIVATE_RANGES_HEADER}\n<private: {} range(s), {bytes} bytes of file text withheld>",
            self.ranges.len()
        )
    }
}

/// The prompt with the staged ranges appended after a blank line (the
/// prompt itself is never altered). No ranges: the prompt unchanged.
pub fn apply_private_ranges(prompt: &str, ranges: &PrivateRanges) -> String {
    if ranges.is_empty() {
        return prompt.to_string();
    }
    let sep = if prompt.ends_with("\n\n") {
        ""
    } else if prompt.ends_with('\n') {
        "\n"
    } else {
        "\n\n"
    };
    format!("{prompt}{sep}{}", ranges.wire())
}

/// Replaces the private text in an invocation (argv, stdin, prompt file)
/// by [`PrivateRanges::placeholder`], for display or for anything persisted.
pub fn redact_invocation(inv: &mut Invocation, ranges: &PrivateRanges) {
    if ranges.is_empty() {
        return;
    }
    let wire = ranges.wire();
    let placeholder = ranges.placeholder();
    let redact = |s: &mut String| {
        if s.contains(&wire) {
            *s = s.replace(&wire, &placeholder);
        }
    };
    inv.args.iter_mut().for_each(redact);
    if let Some(s) = inv.stdin.as_mut() {
        redact(s);
    }
    if let Some(s) = inv.prompt_file_contents.as_mut() {
        redact(s);
    }
}

/// Lines `start..=end` (1-based) of `text`, byte-exact including their line
/// endings; `None` when the window is outside the text. A final newline does
/// not start another line.
pub fn line_window(text: &str, start: usize, end: usize) -> Option<&str> {
    if start == 0 || start > end {
        return None;
    }
    let mut offset = 0;
    let mut from = None;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let n = i + 1;
        if n == start {
            from = Some(offset);
        }
        offset += line.len();
        if n == end {
            return from.map(|f| &text[f..offset]);
        }
    }
    None
}

fn line_count(text: &str) -> usize {
    text.split_inclusive('\n').count()
}

/// Reads each range's file and stages the exact window. FILE is a text
/// attachment name when the store holds one by that name, else a path
/// relative to `cwd` (absolute paths and `..` are refused).
pub fn stage_private_ranges(
    specs: &[RangeSpec],
    state_dir: &Path,
    cwd: &Path,
) -> Result<PrivateRanges> {
    let store = Store::new(state_dir);
    let mut ranges = Vec::with_capacity(specs.len());
    for spec in specs {
        let stored = if names::check("attachment name", &spec.file).is_ok() {
            match store.get(&spec.file) {
                Ok(e) => Some(e),
                Err(VfError::Usage(_)) => None,
                Err(e) => return Err(e),
            }
        } else {
            None
        };
        let (path, what) = match stored {
            Some(e) => {
                if e.kind != AttachmentKind::Text {
                    return Err(VfError::usage(format!(
                        "--private-range {spec}: attachment {:?} is {}, not text",
                        e.name,
                        article(e.kind)
                    )));
                }
                (e.path, format!("attachment {:?}", e.name))
            }
            None => {
                let rel = Path::new(&spec.file);
                if rel.is_absolute()
                    || rel
                        .components()
                        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
                {
                    return Err(VfError::usage(format!(
                        "--private-range {spec}: FILE must be a text attachment or a path \
                         inside the working directory (no absolute path, no `..`)"
                    )));
                }
                if let Some(k) = rel
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(kind_hint)
                    .filter(|k| *k != AttachmentKind::Text)
                {
                    return Err(VfError::usage(format!(
                        "--private-range {spec}: {} is {} by its extension, not text",
                        spec.file,
                        article(k)
                    )));
                }
                let path = cwd.join(rel);
                if !path.is_file() {
                    return Err(VfError::usage(format!(
                        "--private-range {spec}: no text attachment and no file named {:?} \
                         in {}",
                        spec.file,
                        cwd.display()
                    )));
                }
                (path, spec.file.clone())
            }
        };
        let bytes = std::fs::read(&path).map_err(|e| {
            VfError::usage(format!(
                "--private-range {spec}: cannot read {}: {e}",
                path.display()
            ))
        })?;
        let text = check_text(&bytes, &format!("--private-range {spec}: {what}"))?;
        let window = line_window(text, spec.start, spec.end).ok_or_else(|| {
            VfError::usage(format!(
                "--private-range {spec}: lines {}-{} are outside {what}, which has {} line(s)",
                spec.start,
                spec.end,
                line_count(text)
            ))
        })?;
        ranges.push(PrivateRange {
            file: spec.file.clone(),
            start: spec.start,
            end: spec.end,
            text: window.to_string(),
        });
    }
    Ok(PrivateRanges { ranges })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification() {
        for (n, k) in [
            ("notes.md", AttachmentKind::Text),
            ("main.RS", AttachmentKind::Text),
            ("Makefile", AttachmentKind::Text),
            ("shot.png", AttachmentKind::Image),
            ("photo.JPEG", AttachmentKind::Image),
            ("spec.pdf", AttachmentKind::Document),
            ("deck.pptx", AttachmentKind::Document),
        ] {
            assert_eq!(classify(n).unwrap(), k, "{n}");
        }
        for n in ["binary.exe", "archive.tar.gz", "noext", "trailing.", ".md"] {
            assert!(classify(n).is_err(), "{n} classified");
        }
        // The three lists never overlap: a kind is a function of the extension.
        for e in TEXT_EXTENSIONS {
            assert!(!IMAGE_EXTENSIONS.contains(e) && !DOCUMENT_EXTENSIONS.contains(e));
        }
        for e in IMAGE_EXTENSIONS {
            assert!(!DOCUMENT_EXTENSIONS.contains(e));
        }
    }

    #[test]
    fn store_add_list_rm() {
        let t = tempfile::tempdir().unwrap();
        let src = t.path().join("notes.md");
        std::fs::write(&src, "hello\n").unwrap();
        let store = Store::new(&t.path().join("state"));
        assert!(store.list().unwrap().is_empty());
        let e = store.add(&src, None, false).unwrap();
        assert_eq!(
            (e.name.as_str(), e.kind, e.bytes),
            ("notes.md", AttachmentKind::Text, 6)
        );
        assert_eq!(std::fs::read_to_string(&e.path).unwrap(), "hello\n");
        let err = store.add(&src, None, false).unwrap_err().to_string();
        assert!(err.contains("--force"), "{err}");
        std::fs::write(&src, "changed\n").unwrap();
        store.add(&src, None, true).unwrap();
        assert_eq!(std::fs::read_to_string(&e.path).unwrap(), "changed\n");
        // A leftover temp file is not an attachment.
        std::fs::write(store.dir().join(".tmp-xyz"), "x").unwrap();
        let names: Vec<String> = store.list().unwrap().into_iter().map(|e| e.name).collect();
        assert_eq!(names, ["notes.md"]);
        store.remove("notes.md").unwrap();
        assert!(store.get("notes.md").is_err());
        assert!(store.remove("notes.md").is_err());
    }

    #[test]
    fn add_refuses_mismatch_and_bad_text() {
        let t = tempfile::tempdir().unwrap();
        let store = Store::new(t.path());
        let png = t.path().join("shot.png");
        std::fs::write(&png, b"\x89PNG").unwrap();
        assert!(store.add(&png, Some("shot.txt"), false).is_err());
        assert!(store.add(&png, Some("shot-copy.png"), false).is_ok());
        let bad = t.path().join("latin1.txt");
        std::fs::write(&bad, b"caf\xe9\n").unwrap();
        let e = store.add(&bad, None, false).unwrap_err().to_string();
        assert!(e.contains("UTF-8"), "{e}");
        let dir = t.path().join("d.md");
        std::fs::create_dir(&dir).unwrap();
        assert!(store.add(&dir, None, false).is_err());
        assert!(
            store
                .add(&t.path().join("missing.md"), None, false)
                .is_err()
        );
    }

    fn ready_map(ready: &'static [(EngineId, bool)]) -> impl Fn(EngineId) -> Option<bool> {
        move |e| ready.iter().find(|(x, _)| *x == e).map(|(_, r)| *r)
    }

    use AttachmentKind::{Document as D, Image as I, Text as T};
    use EngineId::*;

    #[test]
    fn auto_single_kind_prefers_first_ready() {
        let p = choose_engine(EngineChoice::Auto, &[I], &unknown_readiness).unwrap();
        assert_eq!((p.engine, p.ready), (Codex, None));
        let r = ready_map(&[(Codex, false), (Copilot, true)]);
        let p = choose_engine(EngineChoice::Auto, &[I], &r).unwrap();
        assert_eq!((p.engine, p.ready), (Copilot, Some(true)));
        assert!(p.reason.contains("codex not ready"), "{}", p.reason);
        // A ready engine beats an earlier candidate of unknown readiness.
        let r = ready_map(&[(Opencode, true)]);
        let p = choose_engine(EngineChoice::Auto, &[T], &r).unwrap();
        assert_eq!(p.engine, Opencode);
        // Unknown beats known-not-ready.
        let r = ready_map(&[(Claude, false)]);
        let p = choose_engine(EngineChoice::Auto, &[T], &r).unwrap();
        assert_eq!((p.engine, p.ready), (Opencode, None));
        let p = choose_engine(EngineChoice::Auto, &[D], &unknown_readiness).unwrap();
        assert_eq!(p.engine, Copilot);
    }

    #[test]
    fn auto_all_not_ready_still_plans_but_flags_it() {
        let p = choose_engine(EngineChoice::Auto, &[T], &|_| Some(false)).unwrap();
        assert_eq!((p.engine, p.ready), (Claude, Some(false)));
        assert!(p.reason.contains("none of the"), "{}", p.reason);
    }

    #[test]
    fn auto_several_kinds_needs_one_engine_for_all() {
        let p = choose_engine(EngineChoice::Auto, &[I, T], &unknown_readiness).unwrap();
        assert_eq!(p.engine, Opencode);
        assert!(p.reason.contains("text + image"), "{}", p.reason);
        let p = choose_engine(EngineChoice::Auto, &[I, D, I], &unknown_readiness).unwrap();
        assert_eq!(p.engine, Copilot);
        let r = ready_map(&[(Copilot, false), (Opencode, true)]);
        let p = choose_engine(EngineChoice::Auto, &[I, D], &r).unwrap();
        assert_eq!(p.engine, Opencode);
        // Several files of one kind behave like one.
        let p = choose_engine(EngineChoice::Auto, &[I, I], &unknown_readiness).unwrap();
        assert_eq!(p.engine, Codex);
    }

    #[test]
    fn auto_without_attachments_takes_the_first_engine() {
        let p = choose_engine(EngineChoice::Auto, &[], &unknown_readiness).unwrap();
        assert_eq!(p.engine, Claude);
        let r = ready_map(&[(Claude, false), (Codex, false), (Copilot, true)]);
        assert_eq!(
            choose_engine(EngineChoice::Auto, &[], &r).unwrap().engine,
            Copilot
        );
    }

    #[test]
    fn explicit_engine_refusals_name_capable_engines() {
        let e = choose_engine(EngineChoice::Engine(Gemini), &[I], &unknown_readiness)
            .unwrap_err()
            .to_string();
        assert!(e.contains("codex, copilot, opencode"), "{e}");
        let e = choose_engine(EngineChoice::Engine(Claude), &[T, D], &unknown_readiness)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("document") && e.contains("copilot, opencode"),
            "{e}"
        );
        let p = choose_engine(EngineChoice::Engine(Agy), &[], &unknown_readiness).unwrap();
        assert_eq!(p.engine, Agy);
    }

    #[test]
    fn engine_paths_are_relative_below_cwd() {
        let cwd = Path::new("/repo");
        assert_eq!(
            engine_path(Path::new("/repo/.vibeflow/attachments/a.md"), cwd),
            PathBuf::from(".vibeflow/attachments/a.md")
        );
        assert_eq!(
            engine_path(Path::new("/elsewhere/a.md"), cwd),
            PathBuf::from("/elsewhere/a.md")
        );
        // `/repository` is not below `/repo`.
        assert_eq!(
            engine_path(Path::new("/repository/a.md"), cwd),
            PathBuf::from("/repository/a.md")
        );
    }

    #[test]
    fn range_spec_parsing() {
        let r: RangeSpec = "src/a.rs:3-7".parse().unwrap();
        assert_eq!((r.file.as_str(), r.start, r.end), ("src/a.rs", 3, 7));
        let r: RangeSpec = "odd:name.md:1-1".parse().unwrap();
        assert_eq!(r.file, "odd:name.md");
        for bad in [
            "a.rs",
            "a.rs:3",
            "a.rs:-3",
            "a.rs:3-",
            ":1-2",
            "a.rs:0-2",
            "a.rs:5-4",
            "a.rs:+1-2",
            "a.rs: 1-2",
            "a.rs:1-99999999999999999999999",
        ] {
            assert!(bad.parse::<RangeSpec>().is_err(), "{bad} parsed");
        }
    }

    #[test]
    fn line_windows_are_exact() {
        let t = "one\ntwo\r\nthree\n";
        assert_eq!(line_window(t, 1, 1), Some("one\n"));
        assert_eq!(line_window(t, 2, 3), Some("two\r\nthree\n"));
        assert_eq!(line_window(t, 3, 4), None);
        assert_eq!(line_window("a\nb", 2, 2), Some("b"));
        assert_eq!(line_window("", 1, 1), None);
        assert_eq!(line_window(t, 0, 1), None);
        assert_eq!(line_count(t), 3);
    }

    proptest::proptest! {
        #[test]
        fn line_window_matches_split_lines(
            mut lines in proptest::collection::vec("[a-z\r é]{0,6}", 1..8),
            mut trailing in proptest::bool::ANY,
            a in 1usize..10,
            len in 0usize..10,
        ) {
            let mut text = lines.join("\n");
            if trailing {
                text.push('\n');
            }
            // An empty last piece after a newline is not a line ("a\n" has one).
            if !trailing && lines.last().is_some_and(|l| l.is_empty()) {
                lines.pop();
                trailing = true;
            }
            let b = a + len;
            let got = line_window(&text, a, b);
            if b <= lines.len() {
                let mut want: String = lines[a - 1..b].join("\n");
                if b < lines.len() || trailing {
                    want.push('\n');
                }
                proptest::prop_assert_eq!(got, Some(want.as_str()));
            } else {
                proptest::prop_assert_eq!(got, None);
            }
        }

        #[test]
        fn accepted_names_are_one_plain_component(name in "\\PC{0,70}") {
            if names::check("attachment name", &name).is_ok() {
                let p = Path::new(&name);
                let comps: Vec<Component> = p.components().collect();
                proptest::prop_assert!(matches!(comps.as_slice(), [Component::Normal(_)]));
                proptest::prop_assert!(name.len() <= names::MAX_NAME_LEN);
            }
        }

        #[test]
        fn range_specs_round_trip(file in "[a-z/._:-]{1,12}", a in 1usize..1000, len in 0usize..1000) {
            let s = format!("{file}:{a}-{}", a + len);
            let r: RangeSpec = s.parse().unwrap();
            proptest::prop_assert_eq!(r.to_string(), s);
        }
    }

    fn staged(pairs: &[(&str, usize, usize, &str)]) -> PrivateRanges {
        PrivateRanges {
            ranges: pairs
                .iter()
                .map(|(f, s, e, t)| PrivateRange {
                    file: f.to_string(),
                    start: *s,
                    end: *e,
                    text: t.to_string(),
                })
                .collect(),
        }
    }

    #[test]
    fn wire_form_is_canonical() {
        let r = staged(&[("b.rs", 2, 3, "x \"q\"\n\ty\n"), ("a.md", 1, 1, "é\n")]);
        assert_eq!(
            r.wire(),
            "VF-PRIVATE-FILE-RANGES/1\n\
             [{\"end\":3,\"file\":\"b.rs\",\"start\":2,\"text\":\"x \\\"q\\\"\\n\\ty\\n\"},\
             {\"end\":1,\"file\":\"a.md\",\"start\":1,\"text\":\"é\\n\"}]"
        );
        assert_eq!(
            apply_private_ranges("do it", &r),
            format!("do it\n\n{}", r.wire())
        );
        assert_eq!(
            apply_private_ranges("do it\n", &r),
            format!("do it\n\n{}", r.wire())
        );
        assert_eq!(
            apply_private_ranges("do it", &PrivateRanges::default()),
            "do it"
        );
    }

    #[test]
    fn debug_never_shows_the_text() {
        let r = staged(&[("a.md", 1, 1, "SECRET-LINE\n")]);
        let d = format!("{r:?} {:?}", r.ranges[0]);
        assert!(!d.contains("SECRET"), "{d}");
        assert!(d.contains("bytes: 12"), "{d}");
        assert!(!r.placeholder().contains("SECRET"));
    }

    #[test]
    fn redaction_covers_argv_stdin_and_prompt_file() {
        let r = staged(&[("a.md", 1, 1, "SECRET-LINE\n")]);
        let prompt = apply_private_ranges("p", &r);
        let mut inv = Invocation {
            program: "x".into(),
            args: vec!["-p".into(), prompt.clone()],
            stdin: Some(prompt.clone()),
            cwd: PathBuf::from("/"),
            prompt_file: None,
            prompt_file_contents: Some(prompt),
            warnings: vec![],
        };
        redact_invocation(&mut inv, &r);
        let all = format!(
            "{:?} {:?} {:?}",
            inv.args, inv.stdin, inv.prompt_file_contents
        );
        assert!(!all.contains("SECRET"), "{all}");
        assert!(all.contains("12 bytes"), "{all}");
    }

    #[test]
    fn staging_resolves_attachments_then_paths() {
        let t = tempfile::tempdir().unwrap();
        let cwd = t.path().join("repo");
        let state = cwd.join(".vibeflow");
        std::fs::create_dir_all(cwd.join("src")).unwrap();
        std::fs::write(cwd.join("src/lib.rs"), "a\nb\nc\n").unwrap();
        std::fs::write(cwd.join("pic.png"), "not really\n").unwrap();
        std::fs::write(cwd.join("bin.txt"), b"a\0b\n").unwrap();
        let store = Store::new(&state);
        let src = t.path().join("notes.md");
        std::fs::write(&src, "n1\nn2\n").unwrap();
        store.add(&src, None, false).unwrap();
        let spec = |s: &str| s.parse::<RangeSpec>().unwrap();
        let r = stage_private_ranges(
            &[spec("src/lib.rs:2-3"), spec("notes.md:2-2")],
            &state,
            &cwd,
        )
        .unwrap();
        assert_eq!(
            r.summaries(),
            [
                RangeSummary {
                    file: "src/lib.rs".into(),
                    start: 2,
                    end: 3,
                    bytes: 4
                },
                RangeSummary {
                    file: "notes.md".into(),
                    start: 2,
                    end: 2,
                    bytes: 3
                }
            ]
        );
        assert!(r.wire().contains("\"text\":\"b\\nc\\n\""));
        assert!(r.wire().contains("\"text\":\"n2\\n\""));
        for (bad, why) in [
            ("src/lib.rs:3-4", "3 line(s)"),
            ("pic.png:1-1", "image"),
            ("bin.txt:1-1", "NUL"),
            ("../x.md:1-1", "`..`"),
            ("/etc/hostname:1-1", "absolute"),
            ("missing.md:1-1", "no text attachment"),
        ] {
            let e = stage_private_ranges(&[spec(bad)], &state, &cwd)
                .unwrap_err()
                .to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
        let png = t.path().join("s.png");
        std::fs::write(&png, "x").unwrap();
        store.add(&png, None, false).unwrap();
        let e = stage_private_ranges(&[spec("s.png:1-1")], &state, &cwd)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not text"), "{e}");
    }
}
