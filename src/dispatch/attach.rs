//! Attachments: the store under `<state>/attachments/`, classification by
//! extension, and the selection of stored attachments for one dispatch.
//!
//! Which engine accepts which kind, and with which flag, is the engine
//! contract's business (`Spec::attachment_kinds`, `Engine::build`); the choice
//! of engine is `engine::choice`; private file ranges are `private`.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::engine::{self, AttachmentKind};
use crate::engine::{AcpError, PromptPart};
use crate::engine::{EngineChoice, Pick, Readiness, choose_engine};
use crate::ground::names;
use crate::ground::{Result, VfError};

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

/// Raster image formats the vision-capable CLIs accept: each extension and
/// its media type (the one list: classification, and an ACP image block's
/// `mimeType`).
pub const IMAGE_TYPES: &[(&str, &str)] = &[
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("gif", "image/gif"),
    ("webp", "image/webp"),
];

/// The media type of an image extension (any case); `None` for another.
pub fn image_mime(ext: &str) -> Option<&'static str> {
    let ext = ext.to_ascii_lowercase();
    IMAGE_TYPES.iter().find(|(e, _)| *e == ext).map(|(_, m)| *m)
}

fn image_extensions() -> impl Iterator<Item = &'static str> {
    IMAGE_TYPES.iter().map(|(e, _)| *e)
}

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
            image_extensions().collect::<Vec<_>>().join(", "),
            DOCUMENT_EXTENSIONS.join(", ")
        ))
    })
}

fn kind_of_extension(ext: &str) -> Option<AttachmentKind> {
    if TEXT_EXTENSIONS.contains(&ext) {
        Some(AttachmentKind::Text)
    } else if image_mime(ext).is_some() {
        Some(AttachmentKind::Image)
    } else if DOCUMENT_EXTENSIONS.contains(&ext) {
        Some(AttachmentKind::Document)
    } else {
        None
    }
}

/// The kind a file name's extension implies, if it implies one.
pub(crate) fn kind_hint(file_name: &str) -> Option<AttachmentKind> {
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
        let name = attachment_name(src, name)?;
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
        let bytes = read_source(src, kind)?;
        let dest = self.write(&name, &bytes, force)?;
        Ok(Entry {
            name,
            kind,
            bytes: bytes.len() as u64,
            path: dest,
        })
    }

    /// Writes `bytes` as `<store>/<name>` through a temp file and a rename.
    fn write(&self, name: &str, bytes: &[u8], force: bool) -> Result<PathBuf> {
        let dest = self.dir.join(name);
        if !force && dest.exists() {
            return Err(exists_error(name));
        }
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| VfError::state(format!("cannot create {}: {e}", self.dir.display())))?;
        // Temp names start with `.`, which no attachment name may, so `list`
        // can never mistake a leftover for an attachment.
        let mut tmp = tempfile::Builder::new()
            .prefix(".tmp-")
            .tempfile_in(&self.dir)
            .map_err(|e| VfError::state(format!("cannot write in {}: {e}", self.dir.display())))?;
        tmp.write_all(bytes)
            .and_then(|_| tmp.as_file().sync_all())
            .map_err(|e| VfError::state(format!("cannot write {}: {e}", dest.display())))?;
        let persisted = if force {
            tmp.persist(&dest)
        } else {
            // Refuses atomically if another writer created the name meanwhile.
            tmp.persist_noclobber(&dest)
        };
        match persisted {
            Ok(_) => Ok(dest),
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {
                Err(exists_error(name))
            }
            Err(e) => Err(VfError::state(format!(
                "cannot write {}: {}",
                dest.display(),
                e.error
            ))),
        }
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

/// `--name`, else `src`'s own file name; either must be a safe name.
fn attachment_name(src: &Path, name: Option<&str>) -> Result<String> {
    if let Some(n) = name {
        names::check("attachment name", n)?;
        return Ok(n.to_string());
    }
    let derived = src.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
        VfError::usage(format!(
            "cannot derive an attachment name from {}; pass --name NAME",
            src.display()
        ))
    })?;
    names::check("attachment name", derived)
        .map_err(|e| VfError::usage(format!("{e} (pass --name NAME to choose another name)")))?;
    Ok(derived.to_string())
}

/// The bytes of a regular file under the size cap (text must be UTF-8).
fn read_source(src: &Path, kind: AttachmentKind) -> Result<Vec<u8>> {
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
    Ok(bytes)
}

fn exists_error(name: &str) -> VfError {
    VfError::usage(format!(
        "an attachment named {name:?} already exists; pass --force to replace it"
    ))
}

pub(crate) fn article(k: AttachmentKind) -> &'static str {
    match k {
        AttachmentKind::Text => "text",
        AttachmentKind::Image => "an image",
        AttachmentKind::Document => "a document",
    }
}

/// Text must be UTF-8 without NUL bytes (a NUL means a binary file).
pub(crate) fn check_text<'b>(bytes: &'b [u8], what: &str) -> Result<&'b str> {
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

/// The attachments selected for one dispatch, and the engine chosen for them.
#[derive(Debug, Clone)]
pub struct Selection {
    pub pick: Pick,
    /// The selected attachments, in the order given.
    pub selected: Vec<Entry>,
    /// What the engine receives (paths relative to `cwd` where possible).
    pub attachments: Vec<engine::Attachment>,
}

/// Resolves `names` from the store and chooses the engine for them.
pub fn select(
    choice: EngineChoice,
    names: &[String],
    state_dir: &Path,
    cwd: &Path,
    is_ready: Readiness<'_>,
) -> Result<Selection> {
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
    Ok(Selection {
        pick,
        selected,
        attachments,
    })
}

/// An ACP session's prompt: `prompt`, then each attachment (read from
/// `cwd`) as a prompt part, read on the blocking pool (not the runtime's
/// thread).
pub async fn acp_prompt(
    cwd: PathBuf,
    attachments: Vec<engine::Attachment>,
    prompt: String,
) -> std::result::Result<Vec<PromptPart>, AcpError> {
    crate::ground::offload::run(move || prompt_parts(&cwd, &attachments, prompt))
        .await
        .unwrap_or_else(|e| Err(AcpError::Attachment(format!("reading did not finish: {e}"))))
}

/// The prompt, then each attachment: an image as base64 data, a text file
/// as an embedded resource. The driver refuses a kind the agent's
/// `promptCapabilities` do not take, before any session starts; a file that
/// can no longer be read fails the unit the same way. It reads files:
/// [`acp_prompt`] runs it on the blocking pool.
fn prompt_parts(
    cwd: &std::path::Path,
    attachments: &[crate::engine::Attachment],
    prompt: String,
) -> Result<Vec<PromptPart>, AcpError> {
    use base64::Engine as _;
    let mut parts = vec![PromptPart::Text(prompt)];
    for a in attachments {
        let path = cwd.join(&a.path);
        let bytes = std::fs::read(&path).map_err(|e| {
            AcpError::Attachment(format!("{} could not be read: {e}", a.path.display()))
        })?;
        parts.push(match a.kind {
            AttachmentKind::Image => PromptPart::Image {
                mime_type: image_mime_of(&path).to_string(),
                data: base64::engine::general_purpose::STANDARD.encode(bytes),
            },
            AttachmentKind::Text | AttachmentKind::Document => PromptPart::Resource {
                uri: file_uri(&path),
                mime_type: Some("text/plain".to_string()),
                text: String::from_utf8_lossy(&bytes).into_owned(),
            },
        });
    }
    Ok(parts)
}

/// The image type by its extension (`attach::IMAGE_TYPES`; PNG when the
/// extension names none, as `attach` classified the file an image).
fn image_mime_of(path: &std::path::Path) -> &'static str {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    image_mime(ext).unwrap_or("image/png")
}

/// A `file://` URI of an absolute path (`/` separators on every OS).
fn file_uri(path: &std::path::Path) -> String {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let text = abs.to_string_lossy().replace('\\', "/");
    match text.starts_with('/') {
        true => format!("file://{text}"),
        false => format!("file:///{text}"),
    }
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
            assert!(image_mime(e).is_none() && !DOCUMENT_EXTENSIONS.contains(e));
        }
        for e in image_extensions() {
            assert!(!DOCUMENT_EXTENSIONS.contains(&e));
        }
        let mimes: Vec<_> = ["PNG", "jpg", "JPEG", "gif", "webp", "pdf", "md"]
            .map(image_mime)
            .into();
        assert_eq!(
            mimes,
            [
                Some("image/png"),
                Some("image/jpeg"),
                Some("image/jpeg"),
                Some("image/gif"),
                Some("image/webp"),
                None,
                None
            ]
        );
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

    proptest::proptest! {
        #[test]
        fn accepted_names_are_one_plain_component(name in "\\PC{0,70}") {
            if names::check("attachment name", &name).is_ok() {
                let p = Path::new(&name);
                let comps: Vec<std::path::Component> = p.components().collect();
                proptest::prop_assert!(matches!(comps.as_slice(), [std::path::Component::Normal(_)]));
                proptest::prop_assert!(name.len() <= names::MAX_NAME_LEN);
            }
        }
    }
}
