//! Checks of the source tree itself. No server: these read the tree.
//! - docs/ARCHITECTURE.md is the map a newcomer takes the project over
//!   with, so it must stay true: every source file of every crate is named
//!   in it, and every primitive's folder has what its "Where to add a
//!   primitive" checklist names.
//! - Every module API function the module calls is in the load-time check.

use std::fs;
use std::path::{Path, PathBuf};

const MAP: &str = include_str!("../docs/ARCHITECTURE.md");

/// Each crate's source folder, from the repository's root.
const SOURCE_ROOTS: [&str; 7] =
    ["src", "client/src", "protocol/src", "testkit/src", "bench/src", "faults/src", "interop/rust-peer/src"];

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`, as paths relative to it.
fn rust_files(dir: &Path) -> Vec<String> {
    let mut files = vec![];
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in fs::read_dir(&folder).unwrap_or_else(|err| panic!("{}: {err}", folder.display())) {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path.strip_prefix(dir).expect("under dir").to_string_lossy().replace('\\', "/"));
            }
        }
    }
    files.sort();
    files
}

/// The map's blocks: paragraphs (a list is one), each table row apart.
fn blocks() -> Vec<String> {
    let mut blocks = vec![];
    for paragraph in MAP.split("\n\n") {
        if paragraph.trim_start().starts_with('|') {
            blocks.extend(paragraph.lines().map(str::to_owned));
        } else {
            blocks.push(paragraph.to_owned());
        }
    }
    blocks
}

/// Whether the map names `file` (relative to the source folder `root`):
/// by its path (from the repository, or from its crate's source folder),
/// or by a code span of its name (or of a tail of its path, such as
/// `holds/tests.rs`) in a block that names the folder the tail is in. A
/// file in a `commands/` folder is one command's handler: the folder is
/// described as a whole.
fn named(root: &str, file: &str, blocks: &[String]) -> bool {
    let full = format!("{root}/{file}");
    if MAP.contains(&full) || MAP.contains(&format!("`{file}")) || file.contains("/commands/") {
        return true;
    }
    let parts: Vec<&str> = file.split('/').collect();
    (0..parts.len()).any(|start| {
        let tail = parts[start..].join("/");
        let folder = parts[..start].join("/");
        // A file at a crate's top: the crate's folder (`client/`; the
        // module's is `src/`).
        let folder_names: Vec<String> = if folder.is_empty() {
            vec![root.strip_suffix("/src").map_or("src/".to_owned(), |crate_folder| format!("{crate_folder}/"))]
        } else {
            vec![format!("{folder}/"), format!("{root}/{folder}/")]
        };
        blocks.iter().any(|block| {
            block.contains(&format!("`{tail}")) && folder_names.iter().any(|name| block.contains(name.as_str()))
        })
    })
}

#[test]
fn every_source_file_is_named_in_the_map() {
    let blocks = blocks();
    let mut unnamed = vec![];
    let mut count = 0;
    for root in SOURCE_ROOTS {
        for file in rust_files(&repository().join(root)) {
            count += 1;
            if !named(root, &file, &blocks) {
                unnamed.push(format!("{root}/{file}"));
            }
        }
    }
    assert!(count > 250, "only {count} source files found: the walk missed some");
    assert!(unnamed.is_empty(), "docs/ARCHITECTURE.md names none of these files:\n{}", unnamed.join("\n"));
}

/// The files the checklist asks of every primitive's folder.
const CHECKLIST: [&str; 4] = ["mod.rs", "tests.rs", "commands/mod.rs", "primitive.rs"];

/// Every folder `src/<primitive>/` with commands has its logic, its unit
/// tests, its commands' folder and its descriptor, and is named in
/// `src/primitive.rs`'s `ORDER`, as "Where to add a primitive" says
/// (RLock's logic is `src/lock.rs`, beside its folder).
#[test]
fn every_primitive_folder_has_what_the_checklist_names() {
    let checklist = MAP.split("## Where to add a primitive").nth(1).expect("the checklist section");
    let checklist = checklist.split("\n## ").next().unwrap_or_default();
    let checklist_names = [
        "`src/<primitive>/`",
        "`mod.rs`",
        "`tests.rs`",
        "`src/<primitive>/commands/`",
        "`src/<primitive>/primitive.rs`",
        "`ORDER`",
    ];
    for name in checklist_names {
        assert!(checklist.contains(name), "the checklist no longer names {name}");
    }
    let src = repository().join("src");
    let order = fs::read_to_string(src.join("primitive.rs")).expect("src/primitive.rs");
    let order = order.split("pub const ORDER").nth(1).and_then(|rest| rest.split("];").next()).expect("ORDER");
    let mut primitives = vec![];
    for entry in fs::read_dir(&src).expect("src") {
        let folder = entry.expect("a folder entry").path();
        let name = folder.file_name().expect("a name").to_string_lossy().into_owned();
        if name == "commands" || !folder.join("commands").is_dir() {
            continue;
        }
        for wanted in CHECKLIST {
            let present =
                folder.join(wanted).exists() || (wanted == "mod.rs" && src.join(format!("{name}.rs")).exists());
            assert!(present, "src/{name}/ lacks {wanted}, which the checklist names");
        }
        assert!(order.contains(&format!("\"{name}\",")), "src/primitive.rs's ORDER does not name {name}");
        primitives.push(name);
    }
    assert!(primitives.len() >= 8, "only {primitives:?} found as primitives");
}

/// Every module API function the module calls must be in the load-time
/// check (`src/api.rs`), or a server without it would crash at the call
/// instead of refusing the module. Every file under `src/` is read, so a
/// new file that calls `api!` is covered without being listed.
#[test]
fn every_module_api_called_is_checked_at_load() {
    let checked = include_str!("../src/api.rs").split_once("first_missing!(\n").expect("the check list").1;
    let checked = checked.split(')').next().unwrap_or_default();
    let mut calling = 0;
    for file in rust_files(&repository().join("src")) {
        let source = fs::read_to_string(repository().join("src").join(&file)).expect("a source file");
        let calls: Vec<&str> = source
            .split("api!(")
            .skip(1)
            .map(|call| call.split(')').next().unwrap_or_default())
            .filter(|name| name.starts_with("RedisModule_"))
            .collect();
        calling += usize::from(!calls.is_empty());
        for name in calls {
            assert!(checked.contains(name), "{name} is called in src/{file} but not checked at load");
        }
    }
    assert!(calling >= 20, "only {calling} files call api!: the walk missed some");
}

/// Functions longer than this are split, in the module and the client:
/// a stranger reads each one whole. Tests and data tables are exempt.
const LONGEST_FUNCTION: usize = 80;

/// Functions that are tables of data: a message or a name per case.
const DATA_TABLES: [(&str, &str); 2] = [("src/error.rs", "message"), ("src/api.rs", "missing_api")];

/// Every function of `source` with its name and length in lines (from
/// its `fn` line to the brace that closes it at the same indentation),
/// up to a `#[cfg(test)]` module.
fn function_lengths(source: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = source.lines().take_while(|line| *line != "#[cfg(test)]").collect();
    let mut functions = vec![];
    for (start, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        let indent = &line[..line.len() - code.len()];
        let Some(after) = code.split_once("fn ").filter(|(before, _)| is_fn_prefix(before)).map(|(_, after)| after)
        else {
            continue;
        };
        let name: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        // A declaration without a body (a trait's) ends on its own line.
        let closing = format!("{indent}}}");
        match lines[start..].iter().position(|line| *line == closing) {
            Some(end) if !code.ends_with(';') => functions.push((name, end + 1)),
            _ => {}
        }
    }
    functions
}

/// Whether `before` (what precedes `fn ` on its line) makes it a function's definition.
fn is_fn_prefix(before: &str) -> bool {
    before.split_whitespace().all(|word| {
        matches!(word, "pub" | "async" | "unsafe" | "const" | "extern" | "\"C\"") || word.starts_with("pub(")
    })
}

#[test]
fn no_function_is_longer_than_the_limit() {
    let mut long = vec![];
    for root in ["src", "client/src"] {
        for file in rust_files(&repository().join(root)) {
            if file.ends_with("tests.rs") || file.starts_with("tests/") || file.contains("/tests/") {
                continue;
            }
            let path = format!("{root}/{file}");
            let source = fs::read_to_string(repository().join(&path)).expect("a source file");
            for (name, length) in function_lengths(&source) {
                if length > LONGEST_FUNCTION && !DATA_TABLES.contains(&(path.as_str(), name.as_str())) {
                    long.push(format!("{path}: {name} ({length} lines)"));
                }
            }
        }
    }
    assert!(long.is_empty(), "functions over {LONGEST_FUNCTION} lines: {long:#?}");
    let tables = fs::read_to_string(repository().join("src/error.rs")).expect("src/error.rs");
    assert!(
        function_lengths(&tables).iter().any(|(name, length)| name == "message" && *length > 20),
        "the walk sees no functions"
    );
}

/// The files outside its folder a new primitive edits, as the map lists
/// them (`make map` counts them), exist: the list names real files.
#[test]
fn the_files_a_new_primitive_edits_outside_its_folder_exist() {
    let listed = MAP.split("<!-- outside-folder -->").nth(1).expect("the outside-folder list");
    let listed = listed.split("<!-- /outside-folder -->").next().unwrap_or_default();
    let paths: Vec<&str> =
        listed.split('`').skip(1).step_by(2).filter(|path| path.contains('/') || path.ends_with(".md")).collect();
    assert!(paths.len() >= 8, "only {paths:?} listed");
    for path in paths {
        assert!(repository().join(path).is_file(), "the map lists {path}, which is no file");
    }
}

/// No import cycle in any crate spans more than three files (`make map`
/// prints each crate's largest; `tools/map.py --check-cycles` fails over the
/// limit).
#[test]
fn no_import_cycle_spans_more_than_three_files() {
    let run = std::process::Command::new("python3")
        .arg(repository().join("tools/map.py"))
        .arg("--check-cycles")
        .output()
        .expect("python3 runs tools/map.py");
    assert!(run.status.success(), "{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
}
