//! Where plugin libraries are looked for. The search path is explicit — the pipeline's
//! `plugin_path` (passed in as `extra`), then `FAIRPIPE_PLUGIN_PATH`, then the executable's own
//! folder and its `plugins/` subfolder — never a build folder baked in at compile time.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// The prefix of a plugin library found by name: `libfairpipe_plugin_NAME.so` on Linux.
const FILE_PREFIX: &str = "fairpipe_plugin_";

/// The file name of plugin `name` on this platform (`libfairpipe_plugin_NAME.so` on Linux).
pub fn library_file_name(name: &str) -> String {
    format!("{}{FILE_PREFIX}{}{}", std::env::consts::DLL_PREFIX, name.replace('-', "_"), std::env::consts::DLL_SUFFIX)
}

/// The plugin name a library file name stands for (`libfairpipe_plugin_maft.so` → `maft`).
pub fn plugin_name_of_file(file_name: &str) -> Option<&str> {
    file_name
        .strip_prefix(std::env::consts::DLL_PREFIX)
        .and_then(|r| r.strip_prefix(FILE_PREFIX))
        .and_then(|r| r.strip_suffix(std::env::consts::DLL_SUFFIX))
        .filter(|n| !n.is_empty())
}

/// Folders searched for plugin libraries, in order, without repeats: `extra` (the pipeline's
/// `plugin_path`), the folders of `FAIRPIPE_PLUGIN_PATH` (separated like `PATH`), the
/// executable's folder and its `plugins/` subfolder.
pub fn search_dirs(extra: &[PathBuf]) -> Vec<PathBuf> {
    let env = std::env::var_os("FAIRPIPE_PLUGIN_PATH").map(|p| std::env::split_paths(&p).collect::<Vec<_>>()).unwrap_or_default();
    let exe_dir = std::env::current_exe().ok().and_then(|e| e.parent().map(|d| d.to_path_buf()));
    dirs_in_order(extra, &env, exe_dir.as_deref())
}

/// The search order, given its parts (pure, for tests).
fn dirs_in_order(extra: &[PathBuf], env: &[PathBuf], exe_dir: Option<&std::path::Path>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = extra.iter().chain(env).filter(|d| !d.as_os_str().is_empty()).cloned().collect();
    if let Some(dir) = exe_dir {
        dirs.push(dir.to_path_buf());
        dirs.push(dir.join("plugins"));
    }
    let mut unique = Vec::new();
    for d in dirs {
        if !unique.contains(&d) {
            unique.push(d);
        }
    }
    unique
}

/// Every plugin library in `dirs`, by plugin name (the first folder that has a name wins; within
/// a folder, files are taken in sorted order).
pub fn discover(dirs: &[PathBuf]) -> BTreeMap<String, PathBuf> {
    let mut found = BTreeMap::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else { continue };
        let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect();
        files.sort();
        for file in files {
            let Some(name) = file.file_name().and_then(|f| f.to_str()).and_then(plugin_name_of_file) else { continue };
            found.entry(name.to_string()).or_insert(file);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_round_trip() {
        let file = library_file_name("my-method");
        assert_eq!(plugin_name_of_file(&file), Some("my_method"));
        assert_eq!(plugin_name_of_file("libother.so"), None);
        assert_eq!(plugin_name_of_file(&library_file_name("")), None);
    }

    #[test]
    fn order_is_pipeline_then_environment_then_beside_the_executable() {
        let dirs = dirs_in_order(
            &[PathBuf::from("/p"), PathBuf::from("/e")],
            &[PathBuf::from("/e"), PathBuf::from(""), PathBuf::from("/f")],
            Some(std::path::Path::new("/bin")),
        );
        let want: Vec<PathBuf> = ["/p", "/e", "/f", "/bin", "/bin/plugins"].iter().map(PathBuf::from).collect();
        assert_eq!(dirs, want);
        assert!(!dirs.iter().any(|d| d.to_string_lossy().contains("target")), "no build folder is baked in");
    }

    #[test]
    fn discovery_takes_the_first_folder_and_ignores_other_files() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        for dir in [a.path(), b.path()] {
            std::fs::write(dir.join(library_file_name("alpha")), b"").unwrap();
            std::fs::write(dir.join("libunrelated.so"), b"").unwrap();
            std::fs::create_dir(dir.join(library_file_name("folder"))).unwrap();
        }
        std::fs::write(b.path().join(library_file_name("beta")), b"").unwrap();
        let found = discover(&[a.path().to_path_buf(), b.path().to_path_buf(), PathBuf::from("/no/such/folder")]);
        assert_eq!(found.keys().collect::<Vec<_>>(), ["alpha", "beta"]);
        assert_eq!(found["alpha"], a.path().join(library_file_name("alpha")));
    }
}
