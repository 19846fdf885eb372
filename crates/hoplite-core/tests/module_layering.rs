//! The core's modules depend on each other in one direction (docs/ARCHITECTURE.md): no module
//! imports, directly or through others, a module that imports it back. This test reads the
//! sources, collects each module's references to other modules of the crate (`crate::a::b`,
//! `super::x`, outside comments and `#[cfg(test)]` modules) and fails with the circle it finds.
//! A reference through a re-export (`crate::dispatch::LaunchSpec`, `crate::TeamMember`) counts
//! as a reference to the module that defines the item; the re-export itself is not one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, with its module path (`view::access::bound`).
fn modules(root: &Path, dir: &Path, out: &mut BTreeMap<String, PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read the source folder")
        .map(|e| e.expect("read a folder entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            modules(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path
                .strip_prefix(root)
                .expect("under the root")
                .with_extension("");
            let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            if parts.last().is_some_and(|p| p == "mod") {
                parts.pop();
            }
            if parts == ["lib"] {
                continue;
            }
            out.insert(parts.join("::"), path);
        }
    }
}

/// The code of a file without comments and without its `#[cfg(test)] mod tests { .. }`.
fn code(text: &str) -> String {
    let without_comments: Vec<&str> = text
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect();
    let text = without_comments.join("\n");
    let Some(start) = text.find("#[cfg(test)]\nmod tests {") else {
        return text;
    };
    // The test module runs to its matching brace.
    let mut depth = 0usize;
    let mut end = text.len();
    for (i, c) in text[start..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    end = start + i + 1;
                    break;
                }
            }
            _ => {}
        }
    }
    format!("{}{}", &text[..start], &text[end..])
}

/// The identifier paths after `prefix::` in `code`, brace groups expanded one level
/// (`crate::{a::X, b}` gives `a::X` and `b`).
fn paths_after(code: &str, prefix: &str) -> Vec<String> {
    let mut found = Vec::new();
    let is_path_char = |c: char| c.is_alphanumeric() || c == '_' || c == ':';
    let mut rest = code;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().next_back();
        rest = &rest[i + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                found.push(item.trim().to_owned());
            }
        } else {
            let end = rest.find(|c: char| !is_path_char(c)).unwrap_or(rest.len());
            let path = rest[..end].trim_end_matches(':');
            match rest[end..].strip_prefix('{') {
                // `a::{X, b::Y}`: each item under its module.
                Some(group) if rest[..end].ends_with("::") => {
                    let close = group.find('}').unwrap_or(group.len());
                    for item in group[..close].split(',') {
                        found.push(format!("{path}::{}", item.trim()));
                    }
                }
                _ => found.push(path.to_owned()),
            }
        }
    }
    found
}

/// Where each re-exported item comes from: `(module, item) -> path of the item`, read from the
/// `pub use` and `pub(crate) use` statements of every module (the crate root is `""`).
type Reexports = BTreeMap<(String, String), String>;

fn reexports(mods: &BTreeMap<String, PathBuf>, lib: &Path) -> Reexports {
    let mut found = Reexports::new();
    let files = mods
        .iter()
        .map(|(m, p)| (m.clone(), p.clone()))
        .chain([(String::new(), lib.to_owned())]);
    for (module, path) in files {
        let code = code(&std::fs::read_to_string(&path).expect("read a source file"));
        for statement in code.split(';') {
            let statement = statement.trim();
            let Some(rest) = statement
                .strip_prefix("pub use ")
                .or_else(|| statement.strip_prefix("pub(crate) use "))
            else {
                continue;
            };
            let rest: String = rest.chars().filter(|c| !c.is_whitespace()).collect();
            let rest = rest
                .strip_prefix("crate::")
                .map(str::to_owned)
                .unwrap_or_else(|| {
                    if module.is_empty() {
                        rest.clone()
                    } else {
                        format!("{module}::{rest}")
                    }
                });
            let (base, items) = match rest.split_once("::{") {
                Some((base, group)) => (
                    base.to_owned(),
                    group
                        .trim_end_matches('}')
                        .split(',')
                        .map(str::to_owned)
                        .collect(),
                ),
                None => match rest.rsplit_once("::") {
                    Some((base, item)) => (base.to_owned(), vec![item.to_owned()]),
                    None => continue,
                },
            };
            for item in items {
                let name = item.rsplit("::").next().unwrap_or(&item).to_owned();
                if !name.is_empty() && name != "*" && name != "self" {
                    found.insert((module.clone(), name), format!("{base}::{item}"));
                }
            }
        }
    }
    found
}

/// The module of `mods` that defines what `path` names: the longest module `path` starts
/// with, followed through re-exports.
fn module_of<'m>(mods: &'m BTreeMap<String, PathBuf>, reexports: &Reexports, path: &str) -> Option<&'m str> {
    let segments: Vec<&str> = path.split("::").collect();
    for n in (0..=segments.len()).rev() {
        let module = segments[..n].join("::");
        if n > 0 && !mods.contains_key(&module) {
            continue;
        }
        if let Some(&item) = segments.get(n)
            && let Some(source) = reexports.get(&(module.clone(), item.to_owned()))
            && *source != path
        {
            return module_of(mods, reexports, source);
        }
        return mods.get_key_value(&module).map(|(k, _)| k.as_str());
    }
    None
}

fn edges<'m>(
    mods: &'m BTreeMap<String, PathBuf>,
    reexports: &Reexports,
) -> BTreeMap<&'m str, BTreeSet<&'m str>> {
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (name, path) in mods {
        let code = code(&std::fs::read_to_string(path).expect("read a source file"));
        let mut targets = BTreeSet::new();
        for p in paths_after(&code, "crate::") {
            if let Some(m) = module_of(mods, reexports, &p) {
                targets.insert(m);
            }
        }
        let parent = name.rsplit_once("::").map(|(p, _)| p);
        for p in paths_after(&code, "super::") {
            let full = match parent {
                Some(parent) => format!("{parent}::{p}"),
                None => p.clone(),
            };
            if let Some(m) = module_of(mods, reexports, &full) {
                targets.insert(m);
            }
        }
        targets.remove(name.as_str());
        edges.insert(name.as_str(), targets);
    }
    edges
}

/// A circle of modules, if the graph has one.
fn find_circle<'a>(edges: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Option<Vec<&'a str>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit<'a>(
        node: &'a str,
        edges: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        marks: &mut BTreeMap<&'a str, Mark>,
        stack: &mut Vec<&'a str>,
    ) -> Option<Vec<&'a str>> {
        marks.insert(node, Mark::Open);
        stack.push(node);
        for &next in edges.get(node).into_iter().flatten() {
            match marks.get(next) {
                Some(Mark::Open) => {
                    let start = stack.iter().position(|&n| n == next).unwrap_or(0);
                    let mut circle = stack[start..].to_vec();
                    circle.push(next);
                    return Some(circle);
                }
                Some(Mark::Done) => {}
                None => {
                    if let Some(c) = visit(next, edges, marks, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        marks.insert(node, Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for &node in edges.keys() {
        if !marks.contains_key(node)
            && let Some(c) = visit(node, edges, &mut marks, &mut Vec::new())
        {
            return Some(c);
        }
    }
    None
}

#[test]
fn no_module_of_the_core_imports_itself_back() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut mods = BTreeMap::new();
    modules(&root, &root, &mut mods);
    assert!(
        mods.contains_key("view::access::bound"),
        "the module walk found {mods:?}"
    );
    let reexports = reexports(&mods, &root.join("lib.rs"));
    let edges = edges(&mods, &reexports);
    // The walk sees the references it must, through re-exports too: dispatch uses policies
    // (`crate::policy::RangePolicy` is defined in policy/range.rs), teams scan `ScanValue`s.
    assert!(
        edges["dispatch::pattern"].contains("policy::range"),
        "{:?}",
        edges["dispatch::pattern"]
    );
    assert!(edges["team"].contains("reducer::arith"), "{:?}", edges["team"]);
    assert!(
        edges["view::alloc"].contains("space"),
        "{:?}",
        edges["view::alloc"]
    );
    if let Some(circle) = find_circle(&edges) {
        panic!(
            "an import circle in hoplite-core: {}; move the shared item below both modules \
             (docs/ARCHITECTURE.md lists the layers)",
            circle.join(" -> ")
        );
    }
}

#[test]
fn the_circle_finder_finds_a_circle() {
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    edges.insert("a", ["b"].into());
    edges.insert("b", ["c"].into());
    edges.insert("c", ["a"].into());
    edges.insert("d", ["a"].into());
    assert_eq!(find_circle(&edges), Some(vec!["a", "b", "c", "a"]));
    edges.insert("c", BTreeSet::new());
    assert_eq!(find_circle(&edges), None);
}

#[test]
fn paths_are_read_through_brace_groups() {
    let code = "use crate::{error::Result, view::access::Token};\nlet x = crate::policy::for_each_point(1);\nuse crate::index::{Idx, MdIdx};";
    assert_eq!(
        paths_after(code, "crate::"),
        [
            "error::Result",
            "view::access::Token",
            "policy::for_each_point",
            "index::Idx",
            "index::MdIdx"
        ]
    );
}
