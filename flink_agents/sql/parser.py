"""The parser of our statements and of ``agent_run(...)`` calls inside Flink's.

:func:`parse_statement` returns a statement object for the statements this package runs
(``CREATE/ALTER/DROP/DESC/SHOW [CREATE] TOOL|AGENT|CONNECTION``, ``SET``, ``RESET``) and None
for every other statement, which goes to Flink as written. :func:`find_agent_runs` finds the
``agent_run(...)`` calls of a statement with their text spans, so the statement layer can
replace each call with the view it builds. Errors are :class:`~flink_agents.errors.SqlParseError`
naming the line, the column and what was expected.

Keywords are case-insensitive; identifiers are ``[catalog.][database.]name`` with parts
plain or in backquotes (needed for a name that is one of our keywords, such as ``with``).
"""

from __future__ import annotations

from typing import cast

from flink_agents.errors import SqlParseError
from flink_agents.sql.lexer import Statement, Token, TokenKind, split_statements, tokenize
from flink_agents.sql.statements import (
    AddTool,
    AgentRunCall,
    Alter,
    AlterAction,
    CreateAgent,
    CreateConnection,
    CreateModel,
    CreateTool,
    Describe,
    Drop,
    ModelStatement,
    Name,
    Options,
    ParsedStatement,
    RemoveTool,
    RenameTo,
    ResetConfig,
    ResetOptions,
    SetConfig,
    SetModel,
    SetOptions,
    SetPrompt,
    Show,
    ShowCreate,
    SqlStatement,
)

#: Words that end a name where one could follow (use backquotes for a name like these).
_RESERVED = frozenset(
    {"IF", "USING", "COMMENT", "WITH", "FROM", "IN", "LIKE", "NOT", "SET", "RESET"}
    | {"RENAME", "ADD", "REMOVE", "TO", "EXTENDED", "PARTITION", "BY"}
)
_KINDS = {"TOOL": "tool", "AGENT": "agent", "CONNECTION": "connection"}
_PLURALS = {"TOOLS": "tool", "AGENTS": "agent", "CONNECTIONS": "connection"}


# -- the parser ------------------------------------------------------------------------------


class _Parser:
    def __init__(self, tokens: tuple[Token, ...] | list[Token]) -> None:
        self.tokens = list(tokens)
        self.i = 0

    # -- helpers ------------------------------------------------------------------------------
    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def next(self) -> Token:
        token = self.peek()
        if token.kind is not TokenKind.END:
            self.i += 1
        return token

    def error(self, expected: str, token: Token | None = None, context: str = "") -> SqlParseError:
        token = token or self.peek()
        where = f" {context}" if context else ""
        return SqlParseError(
            f"expected {expected}{where}, found {token.describe()}",
            line=token.line,
            column=token.column,
            expected=expected,
        )

    def accept(self, *words: str) -> Token | None:
        if self.peek().is_word(*words):
            return self.next()
        return None

    def expect(self, word: str, context: str = "") -> Token:
        token = self.accept(word)
        if token is None:
            raise self.error(word, context=context)
        return token

    def accept_symbol(self, symbol: str) -> Token | None:
        if self.peek().is_symbol(symbol):
            return self.next()
        return None

    def expect_symbol(self, symbol: str, context: str = "") -> Token:
        token = self.accept_symbol(symbol)
        if token is None:
            raise self.error(f"'{symbol}'", context=context)
        return token

    def at_end(self) -> bool:
        return self.peek().kind is TokenKind.END

    def expect_end(self, expected: str) -> None:
        if not self.at_end():
            raise self.error(expected)

    def name_part(self, what: str) -> Token:
        token = self.peek()
        if token.kind is TokenKind.QUOTED and token.value:
            return self.next()
        if token.kind is TokenKind.WORD and token.value.upper() not in _RESERVED:
            return self.next()
        raise self.error(what)

    def name(self, what: str, *, max_parts: int = 3) -> Name:
        first = self.name_part(what)
        parts = [first.value]
        while self.peek().is_symbol(".") and len(parts) < max_parts:
            self.next()
            parts.append(self.name_part(f"a name part after '.' in {what}").value)
        if self.peek().is_symbol("."):
            raise self.error(
                f"at most {max_parts} name parts ([catalog.]database.name)"
                if max_parts == 3
                else f"at most {max_parts} name parts",
            )
        return Name(tuple(parts), first.line, first.column)

    def string(self, what: str) -> str:
        token = self.peek()
        if token.kind is not TokenKind.STRING:
            raise self.error(what)
        return self.next().value

    def if_not_exists(self) -> bool:
        if self.accept("IF"):
            self.expect("NOT", "after IF")
            self.expect("EXISTS", "after IF NOT")
            return True
        return False

    def if_exists(self) -> bool:
        if self.accept("IF"):
            self.expect("EXISTS", "after IF")
            return True
        return False

    def options(self, context: str) -> Options:
        """``('k' = 'v', ...)``; keys unique."""
        self.expect_symbol("(", context)
        pairs: list[tuple[str, str]] = []
        seen: set[str] = set()
        if self.accept_symbol(")"):
            return ()
        while True:
            key_token = self.peek()
            key = self.string("an option key in quotes ('key' = 'value')")
            if key in seen:
                raise SqlParseError(
                    f"option '{key}' is given twice",
                    line=key_token.line,
                    column=key_token.column,
                    expected="each option once",
                )
            seen.add(key)
            self.expect_symbol("=", f"after option key '{key}'")
            pairs.append((key, self.string(f"a value in quotes for option '{key}'")))
            if self.accept_symbol(")"):
                return tuple(pairs)
            if self.peek().kind is TokenKind.STRING and self.peek(1).is_symbol("="):
                # 'a' = 'x' 'b' = 'y': the FLIP draft's example misses a comma like this
                nxt = self.peek()
                raise SqlParseError(
                    f"expected ',' between options '{key}' and '{nxt.value}' (the options of "
                    f"a WITH list are separated by commas), found {nxt.describe()}",
                    line=nxt.line,
                    column=nxt.column,
                    expected="','",
                )
            if not self.accept_symbol(","):
                raise self.error("',' or ')'", context="in the option list")

    def keys(self) -> tuple[str, ...]:
        self.expect_symbol("(", "after RESET")
        keys = [self.string("an option key in quotes")]
        while self.accept_symbol(","):
            keys.append(self.string("an option key in quotes"))
        self.expect_symbol(")", "after the option keys")
        return tuple(keys)

    def kind(self, table: dict[str, str], context: str) -> str:
        token = self.peek()
        if token.kind is TokenKind.WORD and token.value.upper() in table:
            self.next()
            return table[token.value.upper()]
        names = list(table)
        raise self.error(f"{', '.join(names[:-1])} or {names[-1]}", context=context)

    # -- statements ---------------------------------------------------------------------------
    def statement(self) -> SqlStatement | None:
        first = self.peek()
        line, column = first.line, first.column
        if first.is_word("CREATE"):
            ahead = 2 if self.peek(1).is_word("TEMPORARY") else 1
            if not self.peek(ahead).is_word(*_KINDS):
                self.check_create_function()
                return None
            self.next()
            temporary = self.accept("TEMPORARY") is not None
            kind = self.kind(_KINDS, "after CREATE")
            return self.create(kind, temporary, line, column)
        # `DESC agent` alone describes Flink's table `agent`: ours only with a name after it
        if (
            first.is_word("DESC", "DESCRIBE")
            and self.peek(1).is_word(*_KINDS)
            and self.peek(2).kind is not TokenKind.END
        ):
            self.next()
            kind = self.kind(_KINDS, "")
            extended = self.accept("EXTENDED") is not None
            name = self.name(f"the {kind} name")
            self.expect_end("the end of the statement after the name")
            return Describe(line, column, kind, name, extended)
        if first.is_word("SHOW") and self.peek(1).is_word(*_PLURALS):
            self.next()
            return self.show(self.kind(_PLURALS, ""), line, column)
        if first.is_word("SHOW") and self.peek(1).is_word("CREATE"):
            if not self.peek(2).is_word(*_KINDS):
                return None
            self.next()
            self.next()
            kind = self.kind(_KINDS, "after SHOW CREATE")
            name = self.name(f"the {kind} name")
            self.expect_end("the end of the statement after the name")
            return ShowCreate(line, column, kind, name)
        if first.is_word("DROP"):
            ahead = 2 if self.peek(1).is_word("TEMPORARY") else 1
            if not self.peek(ahead).is_word(*_KINDS):
                return None
            self.next()
            temporary = self.accept("TEMPORARY") is not None
            kind = self.kind(_KINDS, "after DROP")
            if_exists = self.if_exists()
            name = self.name(f"the {kind} name")
            self.expect_end("the end of the statement after the name")
            return Drop(line, column, kind, name, if_exists, temporary)
        if first.is_word("ALTER") and self.peek(1).is_word(*_KINDS):
            self.next()
            kind = self.kind(_KINDS, "")
            if_exists = self.if_exists()
            name = self.name(f"the {kind} name")
            action = self.alter_action(kind)
            self.expect_end("the end of the statement")
            return Alter(line, column, kind, name, action, if_exists)
        if first.is_word("SET"):
            self.next()
            if self.at_end():
                return SetConfig(line, column)
            key = self.string("a configuration key in quotes (SET 'key' = 'value')")
            self.expect_symbol("=", f"after '{key}'")
            value = self.string(f"a value in quotes for '{key}'")
            self.expect_end("the end of the statement")
            return SetConfig(line, column, key, value)
        if first.is_word("RESET"):
            self.next()
            if self.at_end():
                return ResetConfig(line, column)
            key = self.string("a configuration key in quotes (RESET 'key')")
            self.expect_end("the end of the statement")
            return ResetConfig(line, column, key)
        return None

    def check_create_function(self) -> None:
        """Flink runs ``CREATE FUNCTION``; the forms of the FLIP draft Flink cannot run are
        refused here with what to write instead (Flink's own message names a token, not
        the fix): no ``AS '<class>'`` (``CREATE FUNCTION f USING JAR 'x.jar'``) and a
        ``COMMENT`` clause."""
        ahead = 1
        while self.peek(ahead).is_word("TEMPORARY", "SYSTEM"):
            ahead += 1
        if not self.peek(ahead).is_word("FUNCTION"):
            return
        ahead += 1
        if self.peek(ahead).is_word("IF"):
            ahead += 3 if self.peek(ahead + 1).is_word("NOT") else 2
        start = ahead
        while self.peek(ahead).kind in (TokenKind.WORD, TokenKind.QUOTED) and (
            self.peek(ahead + 1).is_symbol(".")
        ):
            ahead += 2
        name_token = self.peek(start)
        name = "".join(t.value for t in self.tokens[self.i + start : self.i + ahead + 1])
        after = self.peek(ahead + 1)
        jars = [
            self.peek(j + 1).value
            for j in range(ahead + 1, len(self.tokens) - self.i)
            if self.peek(j).is_word("JAR") and self.peek(j + 1).kind is TokenKind.STRING
        ]
        using = " USING JAR " + ", JAR ".join(f"'{j}'" for j in jars) if jars else ""
        comment = next(
            (
                self.peek(j)
                for j in range(ahead + 1, len(self.tokens) - self.i)
                if self.peek(j).is_word("COMMENT")
            ),
            None,
        )
        if name_token.kind in (TokenKind.WORD, TokenKind.QUOTED) and not after.is_word("AS"):
            drop = ", without COMMENT (Flink's CREATE FUNCTION has none)" if comment else ""
            raise SqlParseError(
                f"CREATE FUNCTION {name} needs the class that implements it: write CREATE "
                f"FUNCTION {name} AS 'com.example.MyFunction' [LANGUAGE JAVA]{using}{drop} "
                "(Flink's syntax; the FLIP draft's example leaves out AS '<class>')",
                line=after.line,
                column=after.column,
                expected="AS",
            )
        if comment is not None:
            raise SqlParseError(
                f"Flink's CREATE FUNCTION has no COMMENT clause: drop COMMENT ... from CREATE "
                f"FUNCTION {name} (describe a tool over it with CREATE TOOL ... COMMENT '...' "
                "or its 'description' option)",
                line=comment.line,
                column=comment.column,
                expected="LANGUAGE, USING JAR or the end of the statement",
            )

    def create(self, kind: str, temporary: bool, line: int, column: int) -> SqlStatement:
        if_not_exists = self.if_not_exists()
        name = self.name(f"the {kind} name")
        if kind == "tool":
            function = connection = None
            if self.accept("USING"):
                using = self.kind(
                    {"FUNCTION": "function", "CONNECTION": "connection"}, "after USING"
                )
                target = self.name(f"the {using} name")
                function, connection = (target, None) if using == "function" else (None, target)
            comment, options = self.comment_and_options(
                "USING FUNCTION, USING CONNECTION, COMMENT, WITH or the end of the statement"
                if function is None and connection is None
                else "COMMENT, WITH or the end of the statement"
            )
            return CreateTool(
                line, column, name, temporary, if_not_exists, function, connection, comment, options
            )
        if kind == "agent":
            self.expect("USING", "after the agent name (USING MODEL m)")
            self.expect("MODEL", "after USING")
            model = self.name("the model name")
            self.expect("USING", "after the model (USING PROMPT '...')")
            self.expect("PROMPT", "after USING")
            prompt = self.string("the prompt text in quotes")
            tools: list[Name] = []
            if self.accept("USING"):
                self.expect("TOOLS", "after USING")
                tools.append(self.name("a tool name"))
                while self.accept_symbol(","):
                    tools.append(self.name("a tool name"))
            comment, options = self.comment_and_options(
                "USING TOOLS, COMMENT, WITH or the end of the statement"
                if not tools
                else "',', COMMENT, WITH or the end of the statement"
            )
            return CreateAgent(
                line,
                column,
                name,
                model,
                prompt,
                tuple(tools),
                temporary,
                if_not_exists,
                comment,
                options,
            )
        comment, options = self.comment_and_options("COMMENT, WITH or the end of the statement")
        return CreateConnection(line, column, name, temporary, if_not_exists, comment, options)

    def comment_and_options(self, expected: str) -> tuple[str | None, Options]:
        comment = None
        if self.accept("COMMENT"):
            comment = self.string("the comment text in quotes")
            expected = "WITH or the end of the statement"
        options: Options = ()
        if self.accept("WITH"):
            options = self.options("after WITH")
            expected = "the end of the statement"
        self.expect_end(expected)
        return comment, options

    def show(self, kind: str, line: int, column: int) -> Show:
        database = None
        if self.accept("FROM", "IN"):
            database = self.name("the database name ([catalog.]database)", max_parts=2)
        not_like = self.accept("NOT") is not None
        like = None
        if not_like or self.peek().is_word("LIKE"):
            self.expect("LIKE", "after NOT")
            like = self.string("a LIKE pattern in quotes")
        self.expect_end("FROM, IN, LIKE or the end of the statement" if not like else "the end")
        return Show(line, column, kind, database, like, not_like)

    def alter_action(self, kind: str) -> AlterAction:
        if self.accept("RENAME"):
            self.expect("TO", "after RENAME")
            return RenameTo(self.name(f"the new {kind} name"))
        if self.accept("RESET"):
            return ResetOptions(self.keys())
        if self.accept("SET"):
            if kind == "agent" and self.accept("MODEL"):
                return SetModel(self.name("the model name"))
            if kind == "agent" and self.accept("PROMPT"):
                return SetPrompt(self.string("the prompt text in quotes"))
            if self.peek().is_symbol("("):
                return SetOptions(self.options("after SET"))
            raise self.error(
                "MODEL, PROMPT or '('" if kind == "agent" else "'('", context="after SET"
            )
        if kind == "agent" and self.accept("ADD"):
            self.expect("TOOL", "after ADD")
            return AddTool(self.name("the tool name"))
        if kind == "agent" and self.accept("REMOVE"):
            self.expect("TOOL", "after REMOVE")
            return RemoveTool(self.name("the tool name"))
        if kind == "agent":
            expected = (
                "SET MODEL, SET PROMPT, ADD TOOL, REMOVE TOOL, SET (...), RESET (...) or RENAME TO"
            )
        else:
            expected = "SET (...), RESET (...) or RENAME TO"
        raise self.error(expected, context=f"after ALTER {kind.upper()} name")

    # -- agent_run ----------------------------------------------------------------------------
    def agent_run(self, statement: Statement) -> AgentRunCall:
        """Parse ``agent_run ( args )`` at the current token."""
        j = self.i
        call = self.next()
        open_paren = self.expect_symbol("(", "after agent_run")
        args: dict[str, object] = {}
        if self.accept_symbol(")"):
            self.missing_args(args, open_paren)
        while True:
            arg_token = self.peek()
            name, value = self.agent_run_arg()
            if name in args:
                raise SqlParseError(
                    f"agent_run argument {name} is given twice",
                    line=arg_token.line,
                    column=arg_token.column,
                    expected="each argument once",
                )
            args[name] = value
            if self.peek().is_symbol(")"):
                close = self.next()
                break
            if not self.accept_symbol(","):
                raise self.error("',' or ')'", context="in the agent_run arguments")
        self.missing_args(args, close)
        start, end = statement.local(call)[0], statement.local(close)[1]
        # FROM TABLE(agent_run(...)): the wrapper is replaced too
        if (
            j >= 2
            and self.tokens[j - 1].is_symbol("(")
            and self.tokens[j - 2].is_word("TABLE")
            and self.peek().is_symbol(")")
        ):
            start = statement.local(self.tokens[j - 2])[0]
            end = statement.local(self.next())[1]
        table, partition = cast("tuple[Name, tuple[str, ...]]", args["INPUT"])
        return AgentRunCall(
            start=start,
            end=end,
            line=call.line,
            column=call.column,
            input=table,
            agent=args["AGENT"],  # type: ignore[arg-type]
            column_name=args["COL"],  # type: ignore[arg-type]
            partition_by=partition,
            config=args.get("CONFIG", ()),  # type: ignore[arg-type]
        )

    def missing_args(self, args: dict[str, object], at: Token) -> None:
        missing = [
            form
            for name, form in (
                ("INPUT", "INPUT => TABLE t"),
                ("AGENT", "AGENT => AGENT a"),
                ("COL", "COL => DESCRIPTOR(c)"),
            )
            if name not in args
        ]
        if missing:
            raise SqlParseError(
                f"agent_run is missing {', '.join(missing)}",
                line=at.line,
                column=at.column,
                expected=", ".join(missing),
            )

    def agent_run_arg(self) -> tuple[str, object]:
        token = self.peek()
        if token.kind is TokenKind.WORD and self.peek(1).is_symbol("=>"):
            self.next()
            self.next()
            name = token.value.upper()
            if name == "INPUT_COL":
                name = "COL"
            if name not in ("INPUT", "AGENT", "COL", "CONFIG"):
                raise SqlParseError(
                    f"unknown agent_run argument {token.value}: expected INPUT, AGENT, COL "
                    "(or INPUT_COL) or CONFIG",
                    line=token.line,
                    column=token.column,
                    expected="INPUT, AGENT, COL, INPUT_COL or CONFIG",
                )
        else:  # positional: the leading keyword says which argument it is
            by_keyword = {"TABLE": "INPUT", "AGENT": "AGENT", "DESCRIPTOR": "COL", "MAP": "CONFIG"}
            name = by_keyword.get(token.value.upper(), "") if token.kind is TokenKind.WORD else ""
            if not name:
                raise self.error(
                    "an agent_run argument (INPUT => TABLE t, AGENT => AGENT a, "
                    "COL => DESCRIPTOR(c) or CONFIG => MAP[...])"
                )
        if name == "INPUT":
            self.expect("TABLE", "after INPUT =>")
            table = self.name("the input table name")
            return name, (table, self.partition_by())
        if name == "AGENT":
            self.accept("AGENT")
            return name, self.name("the agent name")
        if name == "COL":
            self.expect("DESCRIPTOR", "after COL =>")
            self.expect_symbol("(", "after DESCRIPTOR")
            column = self.name_part("a column name").value
            self.expect_symbol(")", "after the column name (DESCRIPTOR takes one column)")
            return name, column
        self.expect("MAP", "after CONFIG =>")
        self.expect_symbol("[", "after MAP")
        entries: list[str] = []
        if not self.peek().is_symbol("]"):
            entries.append(self.string("a key in quotes"))
            while self.accept_symbol(","):
                entries.append(self.string("a key or value in quotes"))
        close = self.expect_symbol("]", "after the MAP entries")
        if len(entries) % 2:
            raise SqlParseError(
                "CONFIG => MAP[...] needs key, value pairs; the last key has no value",
                line=close.line,
                column=close.column,
                expected="a value in quotes",
            )
        return name, tuple(zip(entries[::2], entries[1::2], strict=True))

    def partition_by(self) -> tuple[str, ...]:
        if not self.accept("PARTITION"):
            return ()
        self.expect("BY", "after PARTITION")
        if self.accept_symbol("("):
            columns = [self.name_part("a column name").value]
            while self.accept_symbol(","):
                columns.append(self.name_part("a column name").value)
            self.expect_symbol(")", "after the PARTITION BY columns")
            return tuple(columns)
        columns = [self.name_part("a column name").value]
        # PARTITION BY a, b: a comma followed by another argument ends the list.
        while self.peek().is_symbol(",") and not self._argument_follows(1):
            self.next()
            columns.append(self.name_part("a column name").value)
        return tuple(columns)

    def _argument_follows(self, ahead: int) -> bool:
        token = self.peek(ahead)
        if token.kind is not TokenKind.WORD:
            return False
        if self.peek(ahead + 1).is_symbol("=>"):
            return True
        nxt = self.peek(ahead + 1)
        return token.is_word("TABLE", "AGENT", "DESCRIPTOR", "MAP") and (
            nxt.kind in (TokenKind.WORD, TokenKind.QUOTED)
            or (nxt.kind is TokenKind.SYMBOL and nxt.value in ("(", "["))
        )


# -- entry points ----------------------------------------------------------------------------


def parse_statement(statement: Statement | str) -> SqlStatement | None:
    """Our statement object for ``statement``, or None when Flink runs it.

    Raises:
        SqlParseError: it is one of our statements but does not parse.
    """
    if isinstance(statement, str):
        statement = _single(statement)
    return _Parser(statement.tokens).statement()


def parse_model_statement(statement: Statement | str) -> SqlStatement | None:
    """A :class:`CreateModel` or :class:`ModelStatement` for a model statement (``CREATE
    MODEL``, ``DROP MODEL``, ``SHOW MODELS``, ``SHOW CREATE MODEL``, ``DESC MODEL``), None
    for any other. Only used where Flink itself has no models (Flink 1.20 and 2.0): on later
    versions these statements are Flink's.

    Raises:
        SqlParseError: a model statement that does not parse.
    """
    if isinstance(statement, str):
        statement = _single(statement)
    return _ModelParser(statement).statement()


class _ModelParser(_Parser):
    def __init__(self, statement: Statement) -> None:
        super().__init__(statement.tokens)
        self.source = statement

    def statement(self) -> SqlStatement | None:
        first = self.peek()
        line, column = first.line, first.column
        ahead = 2 if self.peek(1).is_word("TEMPORARY") else 1
        if first.is_word("CREATE") and self.peek(ahead).is_word("MODEL"):
            self.next()
            temporary = self.accept("TEMPORARY") is not None
            self.next()
            return self.create_model(line, column, temporary)
        if first.is_word("DROP") and self.peek(ahead).is_word("MODEL"):
            self.next()
            temporary = self.accept("TEMPORARY") is not None
            self.next()
            if_exists = self.if_exists()
            name = self.name("the model name")
            self.expect_end("the end of the statement after the name")
            return ModelStatement(line, column, "drop", name, if_exists, temporary)
        if first.is_word("SHOW") and self.peek(1).is_word("MODELS"):
            self.next()
            self.next()
            self.expect_end("the end of the statement after SHOW MODELS")
            return ModelStatement(line, column, "show")
        if (
            first.is_word("SHOW")
            and self.peek(1).is_word("CREATE")
            and self.peek(2).is_word("MODEL")
        ):
            for _ in range(3):
                self.next()
            name = self.name("the model name")
            self.expect_end("the end of the statement after the name")
            return ModelStatement(line, column, "show-create", name)
        if first.is_word("DESC", "DESCRIBE") and self.peek(1).is_word("MODEL"):
            self.next()
            self.next()
            name = self.name("the model name")
            self.expect_end("the end of the statement after the name")
            return ModelStatement(line, column, "describe", name)
        return None

    def columns(self, what: str) -> str:
        """A parenthesized column list, as written."""
        start = self.expect_symbol("(", f"after {what}")
        depth = 1
        while depth:
            token = self.next()
            if token.kind is TokenKind.END:
                raise self.error(f"')' closing the {what} column list", token)
            if token.is_symbol("("):
                depth += 1
            elif token.is_symbol(")"):
                depth -= 1
                end = token
        begin, _ = self.source.local(start)
        _, stop = self.source.local(end)
        return self.source.text[begin:stop]

    def create_model(self, line: int, column: int, temporary: bool) -> CreateModel:
        if_not_exists = self.if_not_exists()
        name = self.name("the model name")
        input_schema = self.columns("INPUT") if self.accept("INPUT") else None
        output_schema = self.columns("OUTPUT") if self.accept("OUTPUT") else None
        comment = self.string("the comment in quotes") if self.accept("COMMENT") else None
        self.expect("WITH", "(a model needs its options: WITH ('provider' = ...))")
        options = self.options("after WITH")
        self.expect_end("the end of the statement after the options")
        return CreateModel(
            line,
            column,
            name,
            temporary,
            if_not_exists,
            input_schema,
            output_schema,
            comment,
            options,
        )


def find_agent_runs(statement: Statement | str) -> list[AgentRunCall]:
    """The ``agent_run(...)`` calls in ``statement``, in text order.

    Raises:
        SqlParseError: a call does not parse.
    """
    if isinstance(statement, str):
        statement = _single(statement)
    calls: list[AgentRunCall] = []
    parser = _Parser(statement.tokens)
    while not parser.at_end():
        token = parser.peek()
        if token.is_word("AGENT_RUN") and parser.peek(1).is_symbol("("):
            calls.append(parser.agent_run(statement))
        else:
            parser.next()
    return calls


def parse_script(script: str) -> list[ParsedStatement]:
    """Split and parse a whole script, so a syntax error anywhere is reported before any
    statement runs.

    Raises:
        SqlParseError: the first statement that does not parse.
    """
    parsed = []
    for statement in split_statements(script):
        ours = parse_statement(statement)
        runs = () if ours is not None else tuple(find_agent_runs(statement))
        parsed.append(ParsedStatement(statement, ours, runs))
    return parsed


def _single(text: str) -> Statement:
    statements = split_statements(text)
    if len(statements) > 1:
        second = statements[1]
        raise SqlParseError(
            "only one statement is allowed here; run a script to run several",
            line=second.line,
            column=second.column,
            expected="the end of the statement",
        )
    if not statements:
        tokens = tokenize(text)
        return Statement(text, tuple(tokens), 1, 1, 0)
    return statements[0]
