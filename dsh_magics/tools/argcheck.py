"""Tool arguments checked against their JSON Schema, without ``jsonschema``.

Why not ``jsonschema``: importing it costs over a second wherever
``rfc3987-syntax`` is installed (Jupyter's dependencies install it; its format
checkers build 38 grammars at import), on every start of ``dsh-magics mcp``
and of any program that imports ``dsh_magics.tools`` (benchmarks/README.md,
``bench_startup.py``). The
tool schemas use a small part of JSON Schema 2020-12, and this module checks
exactly that part, with the same rules: ``integer`` accepts ``5.0``, booleans
are not numbers, ``minLength`` counts code points, keywords about one type
pass values of other types (``enum`` does not: it holds for any value).
A schema with any other keyword is refused when its checker is built, so a
new keyword cannot go unchecked. tests/tools/test_argcheck.py checks that
this and ``jsonschema`` find the same violations on a corpus of arguments.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

#: Keywords that say nothing about validity.
_ANNOTATIONS = frozenset(("description", "title", "default", "examples"))
_KEYWORDS = frozenset(
    (
        "type",
        "enum",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
    )
)


@dataclass(frozen=True)
class Violation:
    """One keyword a value fails, as JSON Schema validators report it."""

    path: tuple[str | int, ...]  # where the value sits in the arguments
    keyword: str  # the failing keyword
    expected: Any  # that keyword's value in the schema
    value: Any  # the value that fails it
    schema: Mapping[str, Any]  # the schema holding the keyword


def is_type(value: Any, name: str) -> bool:
    """JSON Schema's type ``name`` holds for ``value`` (draft 2020-12)."""
    if name == "string":
        return isinstance(value, str)
    if name == "integer":
        if isinstance(value, bool):
            return False
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, numbers.Number) and not isinstance(value, bool)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "null":
        return value is None
    raise ValueError(f"unknown JSON Schema type {name!r}")


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: ``true`` is not ``1``, ``1`` is ``1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if type(a) is not type(b):
        return False
    return bool(a == b)


Check = Callable[[Any, tuple[str | int, ...], list[Violation]], None]


def compile_schema(schema: Mapping[str, Any]) -> Check:
    """A function that appends ``schema``'s violations by a value to a list,
    in the order of the schema's keywords (as ``jsonschema`` yields them)."""
    unknown = set(schema) - _KEYWORDS - _ANNOTATIONS
    if unknown:
        raise ValueError(f"argcheck does not know the keyword(s) {sorted(unknown)}")
    steps: list[Check] = []
    for keyword, expected in schema.items():
        if keyword in _ANNOTATIONS:
            continue
        steps.append(_step(schema, keyword, expected))

    def check(value: Any, path: tuple[str | int, ...], out: list[Violation]) -> None:
        for step in steps:
            step(value, path, out)

    return check


def _step(schema: Mapping[str, Any], keyword: str, expected: Any) -> Check:
    def fail(value: Any, path: tuple[str | int, ...], out: list[Violation]) -> None:
        out.append(Violation(path, keyword, expected, value, schema))

    if keyword == "type":
        names = [expected] if isinstance(expected, str) else list(expected)
        for name in names:
            is_type(None, name)  # an unknown type name is refused here, not at a call

        def check_type(value: Any, path: tuple[str | int, ...], out: list[Violation]) -> None:
            if not any(is_type(value, n) for n in names):
                fail(value, path, out)

        return check_type
    if keyword == "enum":
        options = list(expected)

        def check_enum(value: Any, path: tuple[str | int, ...], out: list[Violation]) -> None:
            if not any(_equal(value, o) for o in options):
                fail(value, path, out)

        return check_enum
    if keyword == "properties":
        props = {name: compile_schema(sub) for name, sub in expected.items()}

        def check_properties(value: Any, path: tuple[str | int, ...], out: list[Violation]) -> None:
            if isinstance(value, dict):
                for name, check in props.items():
                    if name in value:
                        check(value[name], (*path, name), out)

        return check_properties
    if keyword == "required":
        names = list(expected)

        def check_required(value: Any, path: tuple[str | int, ...], out: list[Violation]) -> None:
            if isinstance(value, dict):
                for name in names:
                    if name not in value:
                        fail(value, path, out)

        return check_required
    if keyword == "additionalProperties":
        if expected is not False and expected is not True:
            raise ValueError("argcheck knows additionalProperties only as true or false")
        known = frozenset(schema.get("properties", {}))

        def check_additional(value: Any, path: tuple[str | int, ...], out: list[Violation]) -> None:
            if expected is False and isinstance(value, dict) and any(k not in known for k in value):
                fail(value, path, out)  # one violation for all of them, as jsonschema reports it

        return check_additional
    if keyword == "items":
        item = compile_schema(expected)

        def check_items(value: Any, path: tuple[str | int, ...], out: list[Violation]) -> None:
            if isinstance(value, list):
                for i, v in enumerate(value):
                    item(v, (*path, i), out)

        return check_items
    if keyword in ("minItems", "maxItems", "minLength", "maxLength"):
        of_type: type[list[Any]] | type[str] = list if keyword.endswith("Items") else str
        least = keyword.startswith("min")

        def check_size(value: Any, path: tuple[str | int, ...], out: list[Violation]) -> None:
            if isinstance(value, of_type) and (
                len(value) < expected if least else len(value) > expected
            ):
                fail(value, path, out)

        return check_size
    if keyword in ("minimum", "maximum"):
        least = keyword == "minimum"

        def check_bound(value: Any, path: tuple[str | int, ...], out: list[Violation]) -> None:
            if is_type(value, "number") and (value < expected if least else value > expected):
                fail(value, path, out)

        return check_bound
    raise ValueError(f"argcheck does not know the keyword {keyword!r}")  # pragma: no cover


class Checker:
    """The violations of one schema (see :func:`compile_schema`)."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self._check = compile_schema(schema)

    def violations(self, value: Any) -> list[Violation]:
        out: list[Violation] = []
        self._check(value, (), out)
        return out
