"""A YAML file read with the position of every key and list item.

Private: used by the YAML agents loader. PyYAML's safe loader composes the file into nodes
(which carry their line and column), then builds plain Python values from them; the nodes
are walked once more to note where each key and item stands, so that an error found later
(by pydantic or by the loader) can name the line and the field.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from flink_agents.errors import YamlError, YamlProblem

Loc = tuple[str | int, ...]
"""A place in the document: keys and list indexes from the root."""

_MERGE_TAG = "tag:yaml.org,2002:merge"

#: Limits of a file, checked before anything is built from it: its size, the nodes it
#: expands to (aliases counted at every place they are used: a few lines of nested aliases
#: would expand to billions) and its nesting.
MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_EXPANDED_NODES = 100_000
MAX_DEPTH = 64


class YamlSource:
    """The values of one YAML file and where each key and item stands.

    Attributes:
        path: the file, as given.
        data: the document's values (dicts, lists, scalars); None for an empty file.
    """

    def __init__(self, path: str, data: Any, marks: dict[Loc, tuple[int, int]]) -> None:
        self.path = path
        self.data = data
        self._marks = marks

    @staticmethod
    def read(path: str | os.PathLike[str]) -> YamlSource:
        """Read and parse ``path``.

        Raises:
            YamlError: the file cannot be read, is not valid YAML, or has a key twice in
                one mapping.
        """
        name = str(path)
        try:
            size = Path(path).stat().st_size
            if size > MAX_FILE_BYTES:
                too_big = YamlProblem(
                    f"the file has {size} bytes; an agents file may have {MAX_FILE_BYTES} at most",
                    name,
                )
                raise YamlError([too_big])
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            unreadable = YamlProblem(f"cannot read the file: {exc.strerror or exc}", name)
            raise YamlError([unreadable]) from None
        except UnicodeDecodeError as exc:
            not_text = YamlProblem(f"the file is not UTF-8 text: {exc.reason}", name)
            raise YamlError([not_text]) from None
        return YamlSource.parse(text, name)

    @staticmethod
    def parse(text: str, name: str = "<text>") -> YamlSource:
        """Parse ``text`` (the contents of the file ``name``).

        Raises:
            YamlError: not valid YAML (also: characters YAML does not allow, such as a NUL),
                a key twice in one mapping, nesting deeper than :data:`MAX_DEPTH`, more
                than :data:`MAX_EXPANDED_NODES` nodes with aliases expanded, or a recursive
                alias.
        """
        try:
            loader = yaml.SafeLoader(text)  # its reader checks the characters already
        except yaml.YAMLError as exc:
            raise YamlError([_yaml_problem(exc, name, text)]) from None
        try:
            root = loader.get_single_node()
            if root is None:
                return YamlSource(name, None, {})
            _check_expansion(root, name)
            problems: list[YamlProblem] = []
            _duplicate_keys(root, (), name, problems, set())
            if problems:
                raise YamlError(problems)
            data = loader.construct_document(root)  # also expands `<<:` merge keys
            marks: dict[Loc, tuple[int, int]] = {(): _mark(root)}
            _note_marks(loader, root, (), marks, set())
            return YamlSource(name, data, marks)
        except yaml.YAMLError as exc:
            raise YamlError([_yaml_problem(exc, name, text)]) from None
        except RecursionError:
            deep = YamlProblem(f"not valid YAML here: nested deeper than {MAX_DEPTH} levels", name)
            raise YamlError([deep]) from None
        finally:
            loader.dispose()

    # -- where things are --------------------------------------------------------------
    def clean(self, loc: Sequence[Any]) -> Loc:
        """``loc`` without the steps that are not keys or indexes of the data (the
        variant tags pydantic puts into the locations of union errors), and cut where the
        data ends (a missing key stays as the last step)."""
        out: list[str | int] = []
        value = self.data
        for step in loc:
            in_dict = isinstance(value, dict) and isinstance(step, (str, int)) and step in value
            in_list = isinstance(value, list) and isinstance(step, int) and 0 <= step < len(value)
            if in_dict or in_list:
                out.append(step)
                value = value[step]
            elif isinstance(value, dict) and isinstance(step, str) and _is_field_name(step):
                out.append(step)  # a missing key: keep it, stop here
                break
        return tuple(out)

    def position(self, loc: Loc) -> tuple[int | None, int | None]:
        """Line and column (1-based) of ``loc``, or of the nearest enclosing place that
        exists (for a missing key: the mapping that lacks it)."""
        for end in range(len(loc), -1, -1):
            mark = self._marks.get(loc[:end])
            if mark is not None:
                return mark
        return None, None

    def problem(self, loc: Sequence[Any], message: str) -> YamlProblem:
        """A problem at ``loc``, with its file, line, column and field."""
        clean = self.clean(loc)
        line, column = self.position(clean)
        return YamlProblem(message, self.path, line, column, field_name(clean) or None)

    def get(self, loc: Loc) -> Any:
        """The value at ``loc`` (None when it does not exist)."""
        value = self.data
        for step in loc:
            try:
                value = value[step]
            except (KeyError, IndexError, TypeError):
                return None
        return value


def _yaml_problem(exc: yaml.YAMLError, name: str, text: str) -> YamlProblem:
    """A problem for PyYAML's error, with its line and column when it has them."""
    if isinstance(exc, yaml.reader.ReaderError):  # a character YAML does not allow
        before = text[: exc.position]
        line, column = before.count("\n") + 1, exc.position - (before.rfind("\n") + 1) + 1
        code = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1])
        return YamlProblem(
            f"not valid YAML: character U+{code:04X} is not allowed ({exc.reason})",
            name,
            line,
            column,
        )
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is None:
        return YamlProblem(f"not valid YAML: {problem}", name)
    return YamlProblem(f"not valid YAML: {problem}", name, mark.line + 1, mark.column + 1)


def _check_expansion(root: yaml.Node, name: str) -> None:
    """Reject, before anything is built, a document that expands to more than
    :data:`MAX_EXPANDED_NODES` nodes (an alias counts its node's whole size at every use:
    a "billion laughs" file), nests deeper than :data:`MAX_DEPTH`, or refers to itself.
    Sizes are counted once per node (a node used by many aliases is one object), so this
    is linear in the file."""
    size: dict[int, int] = {}
    height: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in size:
            continue
        children: list[yaml.Node] = []
        if isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        if children_done:
            on_path.discard(key)
            size[key] = 1 + sum(size[id(c)] for c in children)
            height[key] = 1 + max((height[id(c)] for c in children), default=0)
            if size[key] > MAX_EXPANDED_NODES or height[key] > MAX_DEPTH:
                line, column = _mark(node)
                what = (
                    f"expands to more than {MAX_EXPANDED_NODES} nodes (aliases counted where "
                    "they are used)"
                    if size[key] > MAX_EXPANDED_NODES
                    else f"nests deeper than {MAX_DEPTH} levels"
                )
                raise YamlError([YamlProblem(f"the document {what}", name, line, column)])
            continue
        if key in on_path:
            line, column = _mark(node)
            raise YamlError(
                [YamlProblem("an alias refers to a node that contains it", name, line, column)]
            )
        on_path.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) not in size:
                stack.append((child, False))


def field_name(loc: Sequence[str | int]) -> str:
    """``("agents", 0, "actions", 1, "function")`` -> ``agents[0].actions[1].function``."""
    text = ""
    for step in loc:
        if isinstance(step, int):
            text += f"[{step}]"
        else:
            text += f".{step}" if text else str(step)
    return text


def _is_field_name(step: str) -> bool:
    # pydantic's union tags are capitalized class names or our tags; keys are snake_case.
    return step not in ("action", "reference") and not step[:1].isupper()


def _mark(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _duplicate_keys(
    node: yaml.Node, loc: Loc, path: str, problems: list[YamlProblem], seen: set[int]
) -> None:
    """A key given twice in one mapping (PyYAML would keep the last one silently)."""
    if id(node) in seen:  # an alias of a node already checked (or a recursive one)
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        first: dict[tuple[str, str], int] = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != _MERGE_TAG:
                ident = (key_node.tag, key_node.value)
                line = key_node.start_mark.line + 1
                if ident in first:
                    problems.append(
                        YamlProblem(
                            f"key '{key_node.value}' is given twice (also on line "
                            f"{first[ident]}); YAML would keep only the last one",
                            path,
                            line,
                            key_node.start_mark.column + 1,
                            field_name((*loc, key_node.value)),
                        )
                    )
                else:
                    first[ident] = line
                _duplicate_keys(value_node, (*loc, key_node.value), path, problems, seen)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _duplicate_keys(item, (*loc, index), path, problems, seen)


def _note_marks(
    loader: yaml.SafeLoader,
    node: yaml.Node,
    loc: Loc,
    marks: dict[Loc, tuple[int, int]],
    visiting: set[int],
) -> None:
    if id(node) in visiting:  # a recursive alias
        return
    visiting.add(id(node))
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            try:
                key = loader.construct_object(key_node, deep=True)
            except yaml.YAMLError:
                continue
            if not isinstance(key, (str, int)):
                continue
            marks[(*loc, key)] = _mark(key_node)  # after `<<:` merges the last one wins
            _note_marks(loader, value_node, (*loc, key), marks, visiting)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            marks[(*loc, index)] = _mark(item)
            _note_marks(loader, item, (*loc, index), marks, visiting)
    visiting.discard(id(node))
