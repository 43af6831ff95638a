//! A run's files: `RUN` names `<dir>/<name>.json` or the stem `<dir>/<name>`, and the
//! run's other files (`<name>.folded`, `<name>.<metric>.folded`) sit beside it.

use crate::failure::Failure;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use yieldprof::report::json::{Document, SCHEMA};

/// The files of one run, found from the `RUN` argument.
#[derive(Clone, Debug)]
pub struct RunFiles {
    /// `<dir>/<name>`, without an extension: names may hold dots (`svc.1234`, a
    /// forked child's), so the stem is never cut at the last one.
    stem: PathBuf,
}

impl RunFiles {
    /// The run `run` names; where `<name>.json` is missing, the newest `<name>.<pid>`
    /// beside it (a program writes under its pid unless given a name), said on stderr.
    pub fn locate(run: &Path) -> RunFiles {
        let text = run.as_os_str().to_string_lossy();
        let stem = match text.strip_suffix(".json") {
            Some(stem) => PathBuf::from(stem),
            None => run.to_path_buf(),
        };
        let named = RunFiles { stem };
        if named.file("json").exists() {
            return named;
        }
        match named.newest_of_pids() {
            Some(newest) => {
                eprintln!(
                    "yieldprof: note: reading {}, the newest run of {}",
                    newest.file("json").display(),
                    named.name()
                );
                newest
            }
            None => named,
        }
    }

    /// The newest `<name>.<pid>.json` in the run's folder.
    fn newest_of_pids(&self) -> Option<RunFiles> {
        let dir = match self.stem.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let prefix = format!("{}.", self.name());
        let newest = std::fs::read_dir(dir)
            .ok()?
            .flatten()
            .filter(|e| {
                let file = e.file_name().to_string_lossy().into_owned();
                let pid = file
                    .strip_prefix(&prefix)
                    .and_then(|rest| rest.strip_suffix(".json"));
                pid.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            })
            .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())?;
        let file = newest.file_name().to_string_lossy().into_owned();
        let stem = dir.join(file.strip_suffix(".json")?);
        Some(RunFiles { stem })
    }

    /// The run's name, e.g. `spsc-packed-spin`.
    pub fn name(&self) -> String {
        let name = self.stem.file_name().unwrap_or(self.stem.as_os_str());
        name.to_string_lossy().into_owned()
    }

    /// `<dir>/<name>.<suffix>`, e.g. `suffix` = `calls.folded`.
    pub fn file(&self, suffix: &str) -> PathBuf {
        let mut path = OsString::from(self.stem.as_os_str());
        path.push(".");
        path.push(suffix);
        PathBuf::from(path)
    }

    /// `<name>.json`, read into the library's schema.
    pub fn document(&self) -> Result<Document, Failure> {
        let path = self.file("json");
        let text = yieldprof::report::text::read_utf8(&path).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => Failure::Input(format!(
                "{}: no such file (RUN is a run's `<dir>/<name>.json` or `<dir>/<name>`)",
                path.display()
            )),
            _ => Failure::Input(format!("cannot read {}: {e}", path.display())),
        })?;
        let doc: Document = serde_json::from_str(&text).map_err(|e| {
            // A report of another schema says so, rather than naming a missing field.
            let schema = serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .and_then(|v| v.get("schema")?.as_str().map(str::to_string));
            match schema {
                Some(s) if s != SCHEMA => Failure::Input(format!(
                    "{}: a report of schema `{s}`; this yieldprof reads `{SCHEMA}` ({e})",
                    path.display()
                )),
                _ => Failure::Input(format!("{}: not a yieldprof report: {e}", path.display())),
            }
        })?;
        if doc.schema != SCHEMA {
            eprintln!(
                "yieldprof: note: {} says schema `{}`; read as `{SCHEMA}`",
                path.display(),
                doc.schema
            );
        }
        Ok(doc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_path_and_a_stem_name_the_same_files() {
        let by_json = RunFiles::locate(Path::new("out/svc.1234.json"));
        let by_stem = RunFiles::locate(Path::new("out/svc.1234"));
        for run in [by_json, by_stem] {
            assert_eq!(run.name(), "svc.1234");
            assert_eq!(
                run.file("calls.folded"),
                Path::new("out/svc.1234.calls.folded")
            );
        }
    }
}
