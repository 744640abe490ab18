//! All-or-nothing output. A run writes its results into a staging folder beside the target
//! (`.NAME.staging-PID`) and moves it into place at the end — one atomic exchange of the two folders
//! on Linux (`renameat2`), one rename where there was none before — so the previous result
//! stays whole until then and a failure — a stage error, a full disk, an unwritable file, Ctrl-C —
//! leaves no partial or mixed result. A lock file beside the target (`.NAME.lock`, holding the
//! process id) keeps a second run out of the same folder; a lock left by a process that no longer
//! exists is taken over. The staging folder is registered with [`crate::interrupt`], so a forced
//! exit after a second signal removes it too.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::error::OutputError;

/// The out folder of a run, checked before anything runs: it is a folder or does not exist yet, and
/// its parent exists or can be created.
pub fn check_target(target: &Path) -> Result<(), OutputError> {
    let err = |message: String| OutputError { path: target.to_path_buf(), message };
    if target.as_os_str().is_empty() {
        return Err(err("the out folder is empty; give a folder name".into()));
    }
    if target.exists() && !target.is_dir() {
        return Err(err("exists and is not a folder; choose another out folder or remove the file".into()));
    }
    if target.file_name().is_none() {
        return Err(err("names no folder (it ends in `..` or is a root); give a folder name".into()));
    }
    let parent = parent_of(target);
    // The nearest existing ancestor must be a folder (not a file in the way).
    let mut ancestor = parent.as_path();
    loop {
        if ancestor.exists() {
            if !ancestor.is_dir() {
                return Err(err(format!("{} is a file, so the out folder cannot be created inside it", ancestor.display())));
            }
            break;
        }
        match ancestor.parent() {
            Some(p) if !p.as_os_str().is_empty() => ancestor = p,
            _ => break,
        }
    }
    Ok(())
}

/// The folder a target sits in (`.` for a bare name).
fn parent_of(target: &Path) -> PathBuf {
    match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// A sibling of `target` named `.NAME.<what>`.
fn sibling(target: &Path, what: &str) -> PathBuf {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "out".into());
    parent_of(target).join(format!(".{name}.{what}"))
}

/// The lock file of out folder `target`.
pub fn lock_path(target: &Path) -> PathBuf {
    sibling(target, "lock")
}

/// Whether process `pid` is running (Linux: `/proc/PID` exists; elsewhere assumed running).
fn process_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    let proc = Path::new("/proc");
    if !proc.is_dir() {
        return true;
    }
    proc.join(pid.to_string()).exists()
}

/// A held lock on an out folder; released (its file removed) when dropped.
#[derive(Debug)]
pub struct Lock {
    path: PathBuf,
}

impl Lock {
    /// Take the lock of out folder `target`, or say which process holds it.
    pub fn acquire(target: &Path) -> Result<Lock, OutputError> {
        let path = lock_path(target);
        let parent = parent_of(target);
        std::fs::create_dir_all(&parent).map_err(|e| OutputError { path: parent.clone(), message: e.to_string() })?;
        for _attempt in 0..2 {
            match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut file) => {
                    let _ = writeln!(file, "{}", std::process::id());
                    crate::interrupt::remove_on_exit(&path);
                    return Ok(Lock { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let holder = std::fs::read_to_string(&path).ok().and_then(|t| t.trim().parse::<u32>().ok());
                    match holder {
                        Some(pid) if process_alive(pid) => {
                            return Err(OutputError {
                                path: target.to_path_buf(),
                                message: format!(
                                    "another fairpipe run (process {pid}) is writing into this folder (lock file {}); wait for it to end or choose another out folder",
                                    path.display()
                                ),
                            })
                        }
                        // Left by a process that has ended (or half written): take it over.
                        _ => {
                            let _ = std::fs::remove_file(&path);
                        }
                    }
                }
                Err(e) => return Err(OutputError { path: path.clone(), message: format!("cannot create the lock file: {e}") }),
            }
        }
        Err(OutputError { path, message: "cannot take the lock file (another run keeps recreating it)".into() })
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        crate::interrupt::forget(&self.path);
    }
}

/// A staging folder for out folder `target`: written into, then moved into place by
/// [`Staging::commit`]; removed when dropped uncommitted.
#[derive(Debug)]
pub struct Staging {
    target: PathBuf,
    dir: PathBuf,
    committed: bool,
}

impl Staging {
    /// Create an empty staging folder beside `target` (removing one a crashed run of this process
    /// id left behind).
    pub fn begin(target: &Path) -> Result<Staging, OutputError> {
        let dir = sibling(target, &format!("staging-{}", std::process::id()));
        if dir.exists() {
            let _ = std::fs::remove_dir_all(&dir);
        }
        std::fs::create_dir_all(&dir).map_err(|e| OutputError { path: dir.clone(), message: e.to_string() })?;
        crate::interrupt::remove_on_exit(&dir);
        Ok(Staging { target: target.to_path_buf(), dir, committed: false })
    }

    /// The folder to write into.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where a file written at `staged` (inside the staging folder) ends up after the commit.
    pub fn final_path(&self, staged: &Path) -> PathBuf {
        staged.strip_prefix(&self.dir).map(|rel| self.target.join(rel)).unwrap_or_else(|_| staged.to_path_buf())
    }

    /// Move the staging folder into place: the previous result (if any) is replaced in one step and
    /// then removed. Refused when a stop was requested (Ctrl-C while writing): nothing changes.
    pub fn commit(mut self) -> Result<(), OutputError> {
        let target = self.target.clone();
        let err = |message: String| OutputError { path: target.clone(), message };
        // Hold the exit cleanup while moving, so a forced exit never removes a half-moved result.
        let result = crate::interrupt::while_not_interrupted(|| {
            let previous = sibling(&self.target, &format!("previous-{}", std::process::id()));
            let had_previous = self.target.exists();
            if had_previous && exchange(&self.dir, &self.target) {
                // One atomic step: the new result is in place and the staging folder holds the
                // previous one, removed now.
                self.committed = true;
                let _ = std::fs::remove_dir_all(&self.dir);
                return Ok(());
            }
            // No previous result (one rename), or a file system without the exchange: the
            // previous result is moved aside, the new one moved in (a short gap between the two).
            if had_previous {
                let _ = std::fs::remove_dir_all(&previous);
                std::fs::rename(&self.target, &previous).map_err(|e| err(format!("cannot move the previous result aside: {e}")))?;
            }
            if let Err(e) = std::fs::rename(&self.dir, &self.target) {
                if had_previous {
                    let _ = std::fs::rename(&previous, &self.target);
                }
                return Err(err(format!("cannot move the results into place: {e}")));
            }
            self.committed = true;
            if had_previous {
                let _ = std::fs::remove_dir_all(&previous);
            }
            Ok(())
        });
        if self.committed {
            crate::interrupt::forget(&self.dir);
        }
        match result {
            Some(r) => r,
            None => Err(err("interrupted while writing; the previous result is unchanged".into())),
        }
    }
}

/// Swap the folders `a` and `b` in one atomic step (Linux `renameat2` with `RENAME_EXCHANGE`);
/// false where the file system or the platform cannot, and nothing changed.
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> bool {
    rustix::fs::renameat_with(rustix::fs::CWD, a, rustix::fs::CWD, b, rustix::fs::RenameFlags::EXCHANGE).is_ok()
}

/// Swap the folders `a` and `b` in one atomic step; false where the platform cannot.
#[cfg(not(target_os = "linux"))]
fn exchange(_a: &Path, _b: &Path) -> bool {
    false
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.dir);
            crate::interrupt::forget(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_committed_staging_replaces_the_previous_result_whole() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("out");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("old.csv"), "old").unwrap();
        let staging = Staging::begin(&target).unwrap();
        std::fs::write(staging.dir().join("new.csv"), "new").unwrap();
        // Until the commit the previous result is untouched.
        assert!(target.join("old.csv").exists());
        staging.commit().unwrap();
        assert!(target.join("new.csv").exists());
        assert!(!target.join("old.csv").exists(), "the previous result is replaced, not mixed");
        let left: Vec<_> = std::fs::read_dir(root.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, vec![std::ffi::OsString::from("out")], "no staging or previous folder is left");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_exchange_swaps_two_folders_in_one_step() {
        let root = tempfile::tempdir().unwrap();
        let (a, b) = (root.path().join("a"), root.path().join("b"));
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        std::fs::write(a.join("new"), "").unwrap();
        std::fs::write(b.join("old"), "").unwrap();
        assert!(exchange(&a, &b), "renameat2(RENAME_EXCHANGE) is refused on this file system");
        assert!(b.join("new").exists() && a.join("old").exists());
        assert!(!exchange(&a, &root.path().join("missing")), "nothing to swap with: refused, nothing moved");
        assert!(a.join("old").exists());
    }

    #[test]
    fn a_dropped_staging_leaves_nothing() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("out");
        let staging = Staging::begin(&target).unwrap();
        std::fs::write(staging.dir().join("half.csv"), "x").unwrap();
        drop(staging);
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_second_lock_names_the_holder_and_a_stale_one_is_taken_over() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("out");
        let held = Lock::acquire(&target).unwrap();
        let e = Lock::acquire(&target).unwrap_err().to_string();
        assert!(e.contains(&format!("process {}", std::process::id())), "{e}");
        drop(held);
        assert!(!lock_path(&target).exists());
        // A lock whose process has ended (no pid is above 2^22 on Linux) is stale.
        std::fs::write(lock_path(&target), "4999999\n").unwrap();
        let _taken = Lock::acquire(&target).unwrap();
    }

    #[test]
    fn a_file_in_place_of_the_out_folder_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("out");
        std::fs::write(&file, "x").unwrap();
        let e = check_target(&file).unwrap_err().to_string();
        assert!(e.contains("is not a folder"), "{e}");
        let e = check_target(&file.join("inner")).unwrap_err().to_string();
        assert!(e.contains("is a file"), "{e}");
    }
}
