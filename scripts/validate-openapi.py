#!/usr/bin/env python3
"""Validate an OpenAPI 3.1 document (YAML or JSON) with openapi-spec-validator.

Usage:
  validate-openapi.py FILE        (FILE may be "-" for stdin)

Prints "valid" and exits 0, or prints every error found and exits 1
(exit 2 on usage errors or when openapi-spec-validator is not installed).

The document must declare `openapi: 3.1.x` (3.1.0 is what switchboard serves);
it is then checked against the OpenAPI 3.1 meta-schema with
OpenAPIV31SpecValidator, never with an auto-detected validator, so a 3.0 or
3.2 document cannot pass by accident.

Needs: pip install openapi-spec-validator  (scripts/test.sh installs it into
./.synapse/venv).  Tested with openapi-spec-validator 0.9.
"""
import json
import os
import re
import sys

try:
    import yaml
    from openapi_spec_validator.validation import OpenAPIV31SpecValidator
except ImportError as e:  # pragma: no cover - environment problem
    sys.stderr.write(
        "validate-openapi: %s\n"
        "install it with: python3 -m pip install openapi-spec-validator\n" % e)
    sys.exit(2)


def _path(err):
    # JSON pointer (RFC 6901), so "/paths/~1health/get" names the path "/health"
    parts = [str(p).replace("~", "~0").replace("/", "~1")
             for p in getattr(err, "absolute_path", []) or []]
    return "/" + "/".join(parts) if parts else "(root)"


def main(argv):
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        sys.stderr.write(__doc__)
        return 2
    name = argv[0]
    try:
        if name == "-":
            text = sys.stdin.read()
            base_uri = "file://" + os.getcwd() + "/"
        else:
            with open(name, encoding="utf-8") as f:
                text = f.read()
            base_uri = "file://" + os.path.abspath(name)
    except OSError as e:
        print("cannot read %s: %s" % (name, e))
        return 1

    try:
        # JSON is a subset of YAML 1.2; safe_load handles both for our docs.
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        print("not valid YAML: %s" % e)
        return 1
    if not isinstance(doc, dict):
        print("not an OpenAPI document: top level is %s, not a mapping" % type(doc).__name__)
        return 1

    version = doc.get("openapi")
    if not isinstance(version, str) or not re.fullmatch(r"3\.1\.\d+", version):
        print("openapi version must be 3.1.x (expected \"openapi: 3.1.0\"), found %s"
              % json.dumps(version))
        return 1

    try:
        validator = OpenAPIV31SpecValidator(doc, base_uri=base_uri)
        errors = list(validator.iter_errors())
    except Exception as e:  # unresolvable $ref and similar
        msg = str(e)
        if len(msg) > 300:  # some exceptions embed the whole document
            msg = msg[:300] + " ..."
        print("validation failed: %s: %s" % (type(e).__name__, msg))
        return 1

    if errors:
        for err in errors:
            print("error at %s: %s" % (_path(err), getattr(err, "message", err)))
        print("%d error(s)" % len(errors))
        return 1
    print("valid")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
