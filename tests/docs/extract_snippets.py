#!/usr/bin/env python3
"""Writes the C++ snippets of a Markdown file into one source file, so that the test suite
compiles every snippet the docs show (docs/ promise: a C++ snippet either compiles or is
marked as an excerpt with `<!-- excerpt -->` on the line before its fence).

Each snippet becomes its own namespace: a complete program (it defines `int main`) keeps its
declarations and has its main renamed; a fragment of statements becomes the body of a
function. `#include` lines move to the top of the file. Usage: extract_snippets.py OUT DOC...
"""
import re
import sys


def snippets(lines):
    """(first line number, code lines) of every ```cpp block not marked as an excerpt."""
    i = 0
    while i < len(lines):
        if lines[i].strip().startswith("```cpp"):
            marked = i > 0 and "<!-- excerpt -->" in lines[i - 1]
            start = i + 1
            end = start
            while end < len(lines) and not lines[end].strip().startswith("```"):
                end += 1
            if not marked:
                yield start + 1, lines[start:end]
            i = end
        i += 1


def main():
    out, docs = sys.argv[1], sys.argv[2:]
    includes, bodies = [], []
    for d, doc in enumerate(docs):
        with open(doc, encoding="utf-8") as f:
            lines = f.read().split("\n")
        for n, (line, code) in enumerate(snippets(lines)):
            kept = []
            for c in code:
                if c.lstrip().startswith("#include"):
                    if c.strip() not in includes:
                        includes.append(c.strip())
                else:
                    kept.append(c)
            text = "\n".join(kept)
            name = f"doc{d}_snippet{n}"
            where = f'// {doc}, snippet at line {line}\n#line {line} "{doc}"\n'
            if re.search(r"\bint\s+main\s*\(", text):
                text = re.sub(r"\bint\s+main\s*\(", "int snippet_main(", text)
                bodies.append(f"namespace {name} {{\n{where}{text}\n}}  // namespace {name}\n")
            else:
                bodies.append(f"namespace {name} {{\n[[maybe_unused]] void snippet() {{\n"
                              f"{where}{text}\n}}\n}}  // namespace {name}\n")
    with open(out, "w", encoding="utf-8") as f:
        f.write("// Generated from the docs by tests/docs/extract_snippets.py; do not edit.\n")
        f.write("#include \"docs_prelude.h\"\n")
        for inc in includes:
            f.write(inc + "\n")
        f.write("\n" + "\n".join(bodies))


if __name__ == "__main__":
    main()
