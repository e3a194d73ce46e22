#!/usr/bin/env python3
"""The map's figures, for the record (`make map`): how the code hangs together.

- the largest import cycle of each crate (files that import each other
  through `use crate::…`, `super::…` and paths; a parent's `mod child;` is
  not an import);
- the link-time registries (`#[distributed_slice]`) and how many files add
  to each;
- the INFO counters;
- for each primitive folder `src/<primitive>/`, the files outside it that
  name it (its module path or its commands' prefix): what adding a
  primitive like it touches.
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRATES = {
    "rlock (src/)": "src",
    "rlock-client": "client/src",
    "rlock-protocol": "protocol/src",
    "testkit": "testkit/src",
    "rlock-bench": "bench/src",
    "rlock-faults": "faults/src",
    "rust-peer": "interop/rust-peer/src",
}
PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
BRACED = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{([^}]*)\}")


def module_of(path, src):
    """A file's module path: `a/b.rs` and `a/b/mod.rs` are `a::b`."""
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


def modules(src):
    """Module path (tuple) -> file, for every .rs under src."""
    return {module_of(path, src): path for path in src.rglob("*.rs")}


def strip_comments(text):
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def inline_module_spans(text):
    """The spans of `mod name { … }` blocks written inside a file."""
    spans = []
    for found in re.finditer(r"\bmod\s+[A-Za-z_][A-Za-z0-9_]*\s*\{", text):
        depth, end = 0, found.end() - 1
        for end in range(found.end() - 1, len(text)):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            if depth == 0:
                break
        spans.append((found.start(), end))
    return spans


def references(text):
    """Every path the code names from `crate`, `super` or `self`, with how
    deep in the file's inline modules it is written (`super` there is
    resolved from the inline module, not the file)."""
    spans = inline_module_spans(text)

    def depth(at):
        return sum(start <= at <= end for start, end in spans)

    found = []
    for match in BRACED.finditer(text):
        anchor, prefix, inner = match.groups()
        for item in inner.split(","):
            item = item.strip().split(" as ")[0].strip()
            if item and item != "self" and re.match(r"[A-Za-z_]", item):
                names = prefix.strip(":").split("::") + item.split("::") if prefix else item.split("::")
                found.append((anchor, names, depth(match.start())))
    for match in PATH.finditer(text):
        anchor, rest = match.groups()
        found.append((anchor, rest.strip(":").split("::"), depth(match.start())))
    return found


def resolve(anchor, names, here, known, inline_depth=0):
    """The file a path lands in: its longest prefix that is a module."""
    if anchor == "crate":
        base = ()
    else:
        # `self` is the module the path is written in: the file's (a mod.rs
        # file's module is its folder's, see module_of), or one of its inline
        # modules (None here); `super` is that module's parent.
        base = list(here) + [None] * inline_depth
        names = list(names)
        if anchor == "super":
            base = base[:-1]
        while names and names[0] == "super":
            base = base[:-1]
            names = names[1:]
        if None in base:
            return here
    path = tuple(base) + tuple(names)
    for end in range(len(path), -1, -1):
        if path[:end] in known:
            return path[:end]
    return None


def graph(src):
    known = modules(src)
    edges = {module: set() for module in known}
    for module, path in known.items():
        text = strip_comments(path.read_text())
        for anchor, names, inline_depth in references(text):
            target = resolve(anchor, names, module, known, inline_depth)
            if target is not None and target != module:
                edges[module].add(target)
    return known, edges


def strongly_connected(edges):
    """Tarjan's components, iteratively."""
    index, low, on_stack, stack, components, counter = {}, {}, set(), [], [], [0]
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(component)
    return components


# No import cycle in any crate may span more files than this (issue 42).
CYCLE_LIMIT = 3


def crate_cycles():
    """Each crate's file count and its largest import cycle (file paths)."""
    for crate, folder in CRATES.items():
        known, edges = graph(ROOT / folder)
        cycles = sorted((c for c in strongly_connected(edges) if len(c) > 1), key=len, reverse=True)
        yield crate, len(known), sorted(str(known[m].relative_to(ROOT)) for m in (cycles[0] if cycles else []))


def largest_cycles():
    print("## Largest import cycle per crate\n")
    print("| crate | files | largest cycle | its files |")
    print("| --- | --- | --- | --- |")
    for crate, files, largest in crate_cycles():
        print(f"| {crate} | {files} | {len(largest)} | {', '.join(largest) or 'none'} |")
    print()


def check_cycles():
    """`--check-cycles`: fails when a crate's largest cycle is over the limit."""
    over = [(crate, largest) for crate, _, largest in crate_cycles() if len(largest) > CYCLE_LIMIT]
    for crate, largest in over:
        print(f"{crate}: an import cycle of {len(largest)} files (limit {CYCLE_LIMIT}): {', '.join(largest)}")
    return 1 if over else 0


def registries():
    print("## Link-time registries (`#[distributed_slice]`) in src/\n")
    print("| registry | declared in | files that add to it |")
    print("| --- | --- | --- |")
    texts = {p: p.read_text() for p in (ROOT / "src").rglob("*.rs")}
    declared = {}
    for path, text in texts.items():
        for name in re.findall(r"#\[(?:linkme::)?distributed_slice\]\s*(?:///[^\n]*\s*)*pub static (\w+)", text):
            declared[name] = path
    for name, path in sorted(declared.items()):
        adding = re.compile(rf"distributed_slice\([^)]*\b{name}\)")
        # Macros that add an entry (`command!`) count where they are used.
        macros = {m for text in texts.values() if adding.search(text)
                  for m in re.findall(r"macro_rules! (\w+)", text)
                  if adding.search(text.split(f"macro_rules! {m}", 1)[1].split("\n}\n", 1)[0])}
        adders = [p for p, text in texts.items()
                  if (adding.search(text) and not any(f"macro_rules! {m}" in text for m in macros))
                  or any(re.search(rf"\b{m}!\(", text) for m in macros)]
        print(f"| `{name}` | `{path.relative_to(ROOT)}` | {len(adders)} |")
    print()


def counters():
    stats = (ROOT / "src/stats.rs").read_text()
    fields = stats.split("const FIELDS", 1)[1].split("];", 1)[0]
    own = len(re.findall(r"Field::Counter\(", fields))
    sums = len(re.findall(r"Field::SumOfKinds\(", fields))
    per_kind = re.search(r"^kind_counters!\(([^)]*)\)", stats, re.M)
    kinds = len(re.findall(r"KindStats::new\(\"", "".join(p.read_text() for p in (ROOT / "src").rglob("*.rs"))))
    print("## INFO counters\n")
    print(f"- {own} counters of their own, {sums} fields that are sums of per-kind counters (counted once, by kind)")
    per_kind = len(per_kind.group(1).split(",")) if per_kind else "?"
    print(f"- {per_kind} counters per kind (each named once, in `kind_counters!`), {kinds} kinds")
    print()


def command_prefixes(folder):
    prefixes = set()
    for path in (folder / "commands").glob("*.rs"):
        prefixes.update(p.upper() for p in re.findall(r'name: c"([a-zA-Z]+)\.', path.read_text()))
    return prefixes


def coupling():
    print("## What a primitive touches outside its folder\n")
    print("Files outside `src/<primitive>/` that name the primitive (its module path `crate::<primitive>`")
    print("or `<primitive>::`, or its commands' prefix such as `RSEM.`), across the repository:\n")
    print("| primitive | command prefixes | files outside its folder |")
    print("| --- | --- | --- |")
    sources = [p for p in ROOT.rglob("*") if p.is_file() and p.suffix in (".rs", ".md", ".java", ".py", ".lua")
               and not any(part in ("target", ".git", "node_modules") for part in p.parts)]
    texts = {p: p.read_text(errors="replace") for p in sources}
    for folder in sorted((ROOT / "src").iterdir()):
        if not (folder / "commands").is_dir() or folder.name == "commands":
            continue
        prefixes = command_prefixes(folder) or {"RLOCK"}
        patterns = [re.compile(rf"\bcrate::{folder.name}\b|\b{folder.name}::")]
        patterns += [re.compile(rf"\b{prefix}\.[A-Z]") for prefix in prefixes]
        outside = [p for p, text in texts.items() if folder not in p.parents and p != ROOT / "src" / f"{folder.name}.rs"
                   and any(pattern.search(text) for pattern in patterns)]
        print(f"| `{folder.name}` | {', '.join(sorted(prefixes))} | {len(outside)} |")
    print()


def checklist():
    """The files outside its folder a new primitive edits, as docs/ARCHITECTURE.md lists them."""
    text = (ROOT / "docs/ARCHITECTURE.md").read_text()
    listed = text.split("<!-- outside-folder -->", 1)[1].split("<!-- /outside-folder -->", 1)[0]
    items = listed.split("\n- ")[1:]
    paths = [[f for f in re.findall(r"`([^`]+)`", item) if "/" in f or f.endswith(".md")] for item in items]
    every = [f for item, group in zip(items, paths) if not item.startswith("a lock kind") for f in group]
    lock_kind = [f for item, group in zip(items, paths) if item.startswith("a lock kind") for f in group]
    print("## Adding a primitive: files edited outside its folder\n")
    print(f"A dry run of \"Where to add a primitive\": {len(every)} files for any primitive"
          f" ({', '.join(every)}), {len(every) + len(lock_kind)} for a lock kind (also {', '.join(lock_kind)}).")
    print()


def main():
    if sys.argv[1:] == ["--check-cycles"]:
        return check_cycles()
    largest_cycles()
    registries()
    counters()
    checklist()
    coupling()


if __name__ == "__main__":
    sys.exit(main())
