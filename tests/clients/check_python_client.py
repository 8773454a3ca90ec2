#!/usr/bin/env python3
"""Generate the Python client from an OpenAPI document and check that nothing was lost.

Usage: check_python_client.py DOCUMENT OUT_DIR

Runs `openapi-python-client generate` (from this interpreter's venv, with its default
ruff post-hooks) into OUT_DIR/switchboard_client, then fails (exit 1) when
  - the generator printed anything but its "Generating ..." line (every warning, every
    "Unable to process schema" and every skipped endpoint counts), or exited non-zero;
  - an operation (method + path) of the document has no generated function;
  - a component schema has no generated model class. openapi-python-client writes a
    union (oneOf/anyOf without properties) as a Python type union, not a class, so such
    a schema counts as present when every member it names is.
Finally it imports every generated module, so a client that does not even load fails.
"""
import importlib
import os
import pathlib
import re
import subprocess
import sys

import yaml

METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")


def norm_path(path):
    # Generated code renames path parameters (roomId -> room_id): compare the shape.
    return re.sub(r"\{[^}]*\}", "{}", path)


def norm_name(name):
    # Class names drop separators and change case (SyncEvent_Foo -> SyncEventFoo).
    return re.sub(r"[^a-z0-9]", "", name.lower())


def generate(document, package_dir):
    bindir = os.path.dirname(sys.executable)
    exe = os.path.join(bindir, "openapi-python-client")
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    cmd = [exe, "generate", "--path", document, "--output-path", str(package_dir),
           "--meta", "none", "--overwrite"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    out = proc.stdout + proc.stderr
    noise = [line for line in out.splitlines()
             if line.strip() and not line.startswith("Generating ")]
    problems = []
    if proc.returncode != 0:
        problems.append("openapi-python-client exited with %d" % proc.returncode)
    if noise:
        problems.append("openapi-python-client printed warnings:\n  " + "\n  ".join(noise))
    return problems


def generated_operations(package_dir):
    ops = set()
    for module in (package_dir / "api").rglob("*.py"):
        text = module.read_text(encoding="utf-8")
        method = re.search(r'"method":\s*"(\w+)"', text)
        url = re.search(r'"url":\s*f?"([^"]+)"', text)
        if method and url:
            ops.add((method.group(1).lower(), norm_path(url.group(1))))
    return ops


def generated_models(package_dir):
    init = (package_dir / "models" / "__init__.py").read_text(encoding="utf-8")
    return {norm_name(n) for n in re.findall(r"^from \.\S+ import (\w+)", init, re.M)}


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    document, out_dir = argv
    with open(document, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    package_dir = out / "switchboard_client"
    problems = generate(document, package_dir)
    if not (package_dir / "api").is_dir():
        problems.append("no client was generated in %s" % package_dir)
        print("\n".join(problems))
        return 1

    expected_ops = {(m, norm_path(p)) for p, item in doc["paths"].items()
                    for m in METHODS if m in item}
    ops = generated_operations(package_dir)
    for method, path in sorted(expected_ops - ops):
        problems.append("operation dropped: %s %s" % (method.upper(), path))

    models = generated_models(package_dir)
    schemas = doc["components"]["schemas"]
    for name, schema in sorted(schemas.items()):
        if norm_name(name) in models:
            continue
        members = [m.get("$ref", "").rsplit("/", 1)[-1]
                   for m in schema.get("oneOf", []) + schema.get("anyOf", [])]
        if members and "properties" not in schema and all(
                norm_name(m) in models for m in members if m):
            continue
        problems.append("schema dropped: %s" % name)

    sys.path.insert(0, str(out))
    for module in sorted(package_dir.rglob("*.py")):
        rel = module.relative_to(out).with_suffix("")
        name = ".".join(p for p in rel.parts if p != "__init__")
        try:
            importlib.import_module(name)
        except Exception as e:  # a broken generated module
            problems.append("generated module %s does not import: %s" % (name, e))

    if problems:
        print("\n".join(problems))
        return 1
    print("python client: %d operations, %d schemas, %d model classes, no warnings"
          % (len(expected_ops), len(schemas), len(models)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
