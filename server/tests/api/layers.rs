//! The layers of the server: the front ends see only `app` (no file under
//! `src/http` or `src/dashboard` names the store or sqlx: a use-case the
//! front ends need goes in `app/`, and `app::Error` says what a store error
//! means to them), and no top-level module names one above it or beside it.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("a source folder reads") {
            let path = entry.expect("a folder entry reads").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    found
}

#[test]
fn the_front_ends_do_not_name_the_store_or_sqlx() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut offences = Vec::new();
    for front_end in ["http", "dashboard"] {
        let files = sources(&src.join(front_end));
        assert!(!files.is_empty(), "no sources under src/{front_end}");
        for file in files {
            let text = std::fs::read_to_string(&file).expect("a source file reads");
            for (n, line) in text.lines().enumerate() {
                if line.contains("crate::store") || line.contains("sqlx") {
                    offences.push(format!(
                        "{}:{}: {}",
                        file.strip_prefix(&src).unwrap_or(&file).display(),
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "the front ends name the store or sqlx (call `app` instead):\n{}",
        offences.join("\n")
    );
}

/// The server's top-level modules, bottom first; a module may name only
/// modules of lower levels (`crate::name`), never one of its own level or
/// above. The crate's root (`lib.rs`, above all) and `main.rs` are not
/// listed. Circles between the files of one module are not checked here.
///
/// `app` holds the use-cases only. What its state holds sits below it: the
/// caches (`cache`, above `webhooks`, whose listener relay the key cache
/// serves) and what the test controls armed (`test_controls`). The test
/// surface (`testing`: the test controls' use-cases, a merchant per test,
/// fixtures) calls the use-cases, so it sits above `app`, and below what
/// starts a server with fixtures (`start_error`, `config`, `admin`).
const LEVELS: &[&[&str]] = &[
    &["domain", "telemetry"],
    &["store"],
    &["metrics", "serve"],
    &["webhooks"],
    &["cache", "test_controls"],
    &["app"],
    &["testing"],
    &["start_error"],
    &["config"],
    &["admin"],
    &["simulate", "http", "dashboard"],
];

/// The top-level modules `text` names as `crate::name`, outside comments.
fn named_modules(text: &str) -> Vec<(usize, String)> {
    let mut named = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            named.push((n + 1, name));
        }
    }
    named
}

#[test]
fn no_module_names_one_of_its_level_or_above() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let level_of = |name: &str| LEVELS.iter().position(|level| level.contains(&name));
    let mut offences = Vec::new();
    for (level, modules) in LEVELS.iter().enumerate() {
        for module in *modules {
            let folder = src.join(module);
            let file = src.join(format!("{module}.rs"));
            let files = if folder.is_dir() {
                sources(&folder)
            } else {
                vec![file]
            };
            assert!(!files.is_empty(), "no sources for `{module}`");
            for file in files {
                let text = std::fs::read_to_string(&file).expect("a source file reads");
                for (line, name) in named_modules(&text) {
                    if name == *module {
                        continue;
                    }
                    match level_of(&name) {
                        Some(named) if named < level => {}
                        _ => offences.push(format!(
                            "{}:{line}: `{module}` names `crate::{name}`",
                            file.strip_prefix(&src).unwrap_or(&file).display()
                        )),
                    }
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "arrows that run up or sideways (see LEVELS):\n{}",
        offences.join("\n")
    );
}

/// Whether `line` declares an id as a bare integer (`merchant_id: i64`,
/// `webhook_id: Option<i64>`), outside comments.
fn bare_id(line: &str) -> bool {
    let code = line.split("//").next().unwrap_or("");
    code.contains("_id: i64") || code.contains("_id: Option<i64>")
}

/// Ids are types past the edge (`MerchantId`, `WebhookId`, …, and the
/// server's own in `domain::ids`), so a webhook id passed where a merchant
/// id belongs does not compile. Only the store's row structs (what sqlx
/// reads and writes) and its private helpers hold the raw `i64`: outside
/// `src/store` no field or parameter does, and no store function callable
/// from outside the store takes one.
#[test]
fn ids_are_typed_above_the_store_rows() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let store = src.join("store");
    // Store functions that may take a raw id: `enqueue` is given a row's
    // ids by the store's own writers, and a key's id in `touch_key` is of
    // either kind (`KeyOwner::key_id`, as the row holds it).
    let allowed = ["fn enqueue(", "fn touch_key("];
    let mut offences = Vec::new();
    for file in sources(&src) {
        let text = std::fs::read_to_string(&file).expect("a source file reads");
        let shown = file
            .strip_prefix(&src)
            .unwrap_or(&file)
            .display()
            .to_string();
        if !file.starts_with(&store) {
            for (n, line) in text.lines().enumerate() {
                if bare_id(line) {
                    offences.push(format!("{shown}:{}: {}", n + 1, line.trim()));
                }
            }
            continue;
        }
        if file.starts_with(store.join("tests")) {
            continue;
        }
        // In the store: the signatures of functions visible outside it.
        let mut signature: Option<&str> = None;
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("").trim();
            if signature.is_none()
                && (code.starts_with("pub fn")
                    || code.starts_with("pub async fn")
                    || code.starts_with("pub(crate) fn")
                    || code.starts_with("pub(crate) async fn"))
            {
                signature = Some(code);
            }
            let Some(start) = signature else { continue };
            if bare_id(line) && !allowed.iter().any(|a| start.contains(a)) {
                offences.push(format!("{shown}:{}: {}", n + 1, line.trim()));
            }
            if code.ends_with('{') || code.ends_with(';') {
                signature = None;
            }
        }
    }
    assert!(
        offences.is_empty(),
        "ids as bare integers above the store's rows (use the id types):\n{}",
        offences.join("\n")
    );
}

/// The file-level graph of `src/`: each file's module path (`app/mod.rs` is
/// `app`, `app/state.rs` is `app::state`, `lib.rs` the root).
mod graph {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    /// A module path, from the crate's root.
    pub type Module = Vec<String>;

    /// The part of `text` that is code: line comments and string literals
    /// are blanked (doc comments name paths in prose).
    pub fn code_of(text: &str) -> String {
        let mut code = String::with_capacity(text.len());
        for line in text.lines() {
            let mut in_string = false;
            let mut previous = ' ';
            let mut chars = line.chars().peekable();
            while let Some(c) = chars.next() {
                if !in_string && c == '/' && chars.peek() == Some(&'/') {
                    break;
                }
                if c == '"' && previous != '\\' && previous != '\'' {
                    in_string = !in_string;
                    code.push(' ');
                } else {
                    code.push(if in_string { ' ' } else { c });
                }
                previous = c;
            }
            code.push('\n');
        }
        code
    }

    /// Expands a `use` tree (`a::{b, c::{d, e as f}}`) into its paths, each
    /// with the name it binds (`None` for a glob).
    pub fn expand(tree: &str) -> Vec<(Vec<String>, Option<String>)> {
        fn go(prefix: &[String], tree: &str, out: &mut Vec<(Vec<String>, Option<String>)>) {
            let tree = tree.trim();
            if tree.is_empty() {
                return;
            }
            if let Some(open) = tree.find('{') {
                let head = tree[..open].trim().trim_end_matches("::");
                let mut path = prefix.to_vec();
                path.extend(head.split("::").filter(|s| !s.is_empty()).map(String::from));
                let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
                let mut depth = 0;
                let mut start = 0;
                for (i, c) in inner.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            go(&path, &inner[start..i], out);
                            start = i + 1;
                        }
                        _ => {}
                    }
                }
                go(&path, &inner[start..], out);
                return;
            }
            let (path_text, alias) = match tree.split_once(" as ") {
                Some((p, a)) => (p.trim(), Some(a.trim().to_string())),
                None => (tree, None),
            };
            let mut path = prefix.to_vec();
            path.extend(path_text.split("::").map(|s| s.trim().to_string()));
            let last = path.last().cloned().unwrap_or_default();
            if last == "*" {
                path.pop();
                out.push((path, None));
            } else if last == "self" {
                path.pop();
                let name = alias.or_else(|| path.last().cloned());
                out.push((path, name));
            } else {
                let name = alias.unwrap_or(last);
                out.push((path, Some(name)));
            }
        }
        let mut out = Vec::new();
        go(&[], tree, &mut out);
        out
    }

    /// A source file: its `use` statements (with whether they re-export)
    /// and the paths it names inline.
    pub struct File {
        pub shown: String,
        pub module: Module,
        /// `(re-exported, path, bound name)` per imported path.
        pub uses: Vec<(bool, Vec<String>, Option<String>)>,
        /// Paths named in code outside `use` statements.
        pub inline: Vec<Vec<String>>,
    }

    pub fn read(src: &Path, path: &Path) -> File {
        let relative = path.strip_prefix(src).expect("under src");
        let mut module: Module = relative
            .with_extension("")
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        if module.last().is_some_and(|l| l == "mod" || l == "lib") {
            module.pop();
        }
        let mut code = code_of(&std::fs::read_to_string(path).expect("a source file reads"));
        // A file's unit tests (`#[cfg(test)] mod tests { use super::*; … }`,
        // last in the file) are not part of the house.
        if let Some(at) = code.find("#[cfg(test)]\nmod ") {
            code.truncate(at);
        }
        let mut uses = Vec::new();
        let mut rest = code.as_str();
        let mut outside = String::new();
        loop {
            let found = [" use ", "\nuse "]
                .iter()
                .filter_map(|pattern| rest.find(pattern).map(|at| at + pattern.len()))
                .min();
            let Some(start) = found else {
                outside.push_str(rest);
                break;
            };
            let before = &rest[..start];
            outside.push_str(before);
            let reexport = before
                .rsplit('\n')
                .next()
                .is_some_and(|line| line.trim_start().starts_with("pub"));
            let end = rest[start..].find(';').map_or(rest.len(), |e| start + e);
            for (path, name) in expand(&rest[start..end]) {
                uses.push((reexport, path, name));
            }
            rest = &rest[(end + 1).min(rest.len())..];
        }
        let mut inline = Vec::new();
        let bytes = outside.as_bytes();
        let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        let mut i = 0;
        while i < bytes.len() {
            if ident(bytes[i]) && (i == 0 || !(ident(bytes[i - 1]) || bytes[i - 1] == b':')) {
                let mut path = Vec::new();
                let mut j = i;
                loop {
                    let start = j;
                    while j < bytes.len() && ident(bytes[j]) {
                        j += 1;
                    }
                    path.push(outside[start..j].to_string());
                    if outside[j..].starts_with("::") && bytes.get(j + 2).is_some_and(|b| ident(*b))
                    {
                        j += 2;
                    } else {
                        break;
                    }
                }
                if path.len() > 1 {
                    inline.push(path);
                }
                i = j;
            } else {
                i += 1;
            }
        }
        File {
            shown: relative.display().to_string(),
            module,
            uses,
            inline,
        }
    }

    /// Resolves the modules and re-exports of `src/` and answers, per file,
    /// the files it depends on.
    pub fn edges(files: &[File]) -> BTreeMap<String, BTreeSet<String>> {
        let by_module: BTreeMap<&Module, &File> = files.iter().map(|f| (&f.module, f)).collect();
        let is_module = |m: &Module| by_module.contains_key(m);
        // Makes a path absolute as seen from `module`.
        let absolute = |module: &Module, path: &[String]| -> Option<Module> {
            let mut out;
            let mut rest = path;
            match path.first().map(String::as_str) {
                Some("crate") => {
                    out = Vec::new();
                    rest = &path[1..];
                }
                Some("super") => {
                    out = module.clone();
                    while rest.first().is_some_and(|s| s == "super") {
                        out.pop();
                        rest = &rest[1..];
                    }
                }
                Some("self") => {
                    out = module.clone();
                    rest = &path[1..];
                }
                Some(first) => {
                    let mut child = module.clone();
                    child.push(first.to_string());
                    if !is_module(&child) {
                        return None;
                    }
                    out = module.clone();
                }
                None => return None,
            }
            out.extend(rest.iter().cloned());
            Some(out)
        };
        // The target of an absolute path: the deepest module file it
        // names, or where that file's re-export of the next name leads.
        fn target(
            path: &[String],
            by_module: &BTreeMap<&Module, &File>,
            absolute: &dyn Fn(&Module, &[String]) -> Option<Module>,
            depth: usize,
        ) -> Module {
            let mut current: Module = Vec::new();
            for (i, segment) in path.iter().enumerate() {
                let mut next = current.clone();
                next.push(segment.clone());
                if by_module.contains_key(&next) {
                    current = next;
                    continue;
                }
                if depth < 8
                    && let Some(file) = by_module.get(&current)
                {
                    for (reexport, used, name) in &file.uses {
                        if *reexport
                            && name.as_deref() == Some(segment.as_str())
                            && let Some(mut to) = absolute(&current, used)
                        {
                            to.extend(path[i + 1..].iter().cloned());
                            return target(&to, by_module, absolute, depth + 1);
                        }
                    }
                }
                break;
            }
            current
        }
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for file in files {
            // `(path, whether a re-export)`.
            let mut paths: Vec<(Module, bool)> = Vec::new();
            for (reexport, used, _) in &file.uses {
                paths.extend(absolute(&file.module, used).map(|p| (p, *reexport)));
            }
            for named in &file.inline {
                if matches!(named[0].as_str(), "crate" | "super" | "self") {
                    paths.extend(absolute(&file.module, named).map(|p| (p, false)));
                } else {
                    let mut child = file.module.clone();
                    child.push(named[0].clone());
                    if is_module(&child) {
                        paths.extend(absolute(&file.module, named).map(|p| (p, false)));
                    }
                }
            }
            let from = edges.entry(file.shown.clone()).or_default();
            for (path, reexport) in paths {
                let to = target(&path, &by_module, &absolute, 0);
                if let Some(to) = by_module.get(&to)
                    && to.shown != file.shown
                    // A module re-exporting what its own children define
                    // is the tree's front door, not an arrow (declaring a
                    // child with `mod` names no path at all).
                    && !(reexport && to.module.starts_with(&file.module))
                {
                    from.insert(to.shown.clone());
                }
            }
        }
        edges
    }

    /// The circles of a graph: its strongly connected parts of more than
    /// one file (Tarjan's algorithm).
    pub fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
        struct State<'a> {
            edges: &'a BTreeMap<String, BTreeSet<String>>,
            index: BTreeMap<&'a str, usize>,
            low: BTreeMap<&'a str, usize>,
            stack: Vec<&'a str>,
            on_stack: BTreeSet<&'a str>,
            found: Vec<Vec<String>>,
        }
        fn visit<'a>(s: &mut State<'a>, v: &'a str) {
            let n = s.index.len();
            s.index.insert(v, n);
            s.low.insert(v, n);
            s.stack.push(v);
            s.on_stack.insert(v);
            if let Some(next) = s.edges.get(v) {
                for w in next {
                    let w = w.as_str();
                    if !s.index.contains_key(w) {
                        visit(s, w);
                        let low = s.low[w].min(s.low[v]);
                        s.low.insert(v, low);
                    } else if s.on_stack.contains(w) {
                        let low = s.index[w].min(s.low[v]);
                        s.low.insert(v, low);
                    }
                }
            }
            if s.low[v] == s.index[v] {
                let mut part = Vec::new();
                while let Some(w) = s.stack.pop() {
                    s.on_stack.remove(w);
                    part.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if part.len() > 1 {
                    part.sort();
                    s.found.push(part);
                }
            }
        }
        let mut state = State {
            edges,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            found: Vec::new(),
        };
        for v in edges.keys() {
            if !state.index.contains_key(v.as_str()) {
                visit(&mut state, v);
            }
        }
        state.found
    }
}

/// The house reads top to bottom: no two files of `src/` depend on each
/// other, however far round (a file depends on one whose items it names,
/// following `pub use` to where an item is defined; a module's `mod.rs`
/// declaring or re-exporting its own children is the tree, not an arrow).
#[test]
fn no_file_depends_on_itself_through_others() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files: Vec<graph::File> = sources(&src)
        .iter()
        .filter(|p| !p.ends_with("main.rs"))
        .map(|p| graph::read(&src, p))
        .collect();
    let edges = graph::edges(&files);
    let circles = graph::circles(&edges);
    let shown: Vec<String> = circles
        .iter()
        .map(|part| {
            let arrows: Vec<String> = part
                .iter()
                .flat_map(|from| {
                    edges[from]
                        .iter()
                        .filter(|to| part.contains(to))
                        .map(move |to| format!("  {from} -> {to}"))
                })
                .collect();
            format!("{}:\n{}", part.join(", "), arrows.join("\n"))
        })
        .collect();
    assert!(
        circles.is_empty(),
        "import circles inside src/:\n{}",
        shown.join("\n")
    );
}

#[test]
fn the_graph_reads_use_trees_and_circles() {
    let paths = graph::expand("crate::store::{Store, outbox::{A, B as C}, self}");
    let shown: Vec<String> = paths
        .iter()
        .map(|(p, n)| format!("{}={}", p.join("::"), n.as_deref().unwrap_or("*")))
        .collect();
    assert_eq!(
        shown,
        [
            "crate::store::Store=Store",
            "crate::store::outbox::A=A",
            "crate::store::outbox::B=C",
            "crate::store=store"
        ]
    );
    let mut edges = std::collections::BTreeMap::new();
    for (from, to) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        edges
            .entry(from.to_string())
            .or_insert_with(std::collections::BTreeSet::new)
            .insert(to.to_string());
    }
    edges.entry("d".to_string()).or_default();
    assert_eq!(graph::circles(&edges), [["a", "b", "c"]]);
}
