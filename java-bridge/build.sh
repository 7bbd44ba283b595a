#!/usr/bin/env bash
# Builds the Java side of the bridge with plain javac + jar (no Maven: Maven Central is not
# reachable here) and runs its self test.
#
#   java-bridge/build.sh [--no-test]
#
# Output: flink_agents/runtime/java/lib/flink-agents-bridge.jar (shipped inside the Python
# package). Compiles for Java 11 against the jars of the installed apache-flink wheel
# (pyflink/lib/*, pyflink/opt/*) when it is importable; the bridge itself needs only the JDK,
# the Flink operators (src/main/java/org/flinkagents/flink) need those jars and are left out
# without them (the Python side then falls back to PyFlink's own operators and Python code).
# PYTHON selects the interpreter used to find pyflink (default: ../.venv/bin/python, python3).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
out_jar="$root/flink_agents/runtime/java/lib/flink-agents-bridge.jar"
build="$here/build"
run_tests=1
[[ "${1:-}" == "--no-test" ]] && run_tests=0

python="${PYTHON:-}"
if [[ -z "$python" ]]; then
    if [[ -x "$root/.venv/bin/python" ]]; then python="$root/.venv/bin/python"; else python=python3; fi
fi
classpath=""
pyflink_dir="$("$python" -c 'import os, pyflink; print(os.path.dirname(pyflink.__file__))' 2>/dev/null || true)"
if [[ -n "$pyflink_dir" && -d "$pyflink_dir/lib" ]]; then
    classpath="$pyflink_dir/lib/*:$pyflink_dir/opt/*"
fi

rm -rf "$build"
mkdir -p "$build/classes" "$build/test-classes" "$(dirname "$out_jar")"
if [[ -n "$classpath" ]]; then
    find "$here/src/main/java" -name '*.java' > "$build/sources.txt"
else
    echo "pyflink not found: building the bridge without the Flink operators" >&2
    find "$here/src/main/java" -name '*.java' -not -path '*/org/flinkagents/flink/*' \
        > "$build/sources.txt"
fi
javac --release 11 -encoding UTF-8 -Xlint:all,-try,-path -Werror ${classpath:+-cp "$classpath"} \
    -d "$build/classes" @"$build/sources.txt"

if [[ $run_tests -eq 1 ]]; then
    find "$here/src/test/java" -name '*.java' > "$build/test-sources.txt"
    javac --release 11 -encoding UTF-8 -cp "$build/classes" -d "$build/test-classes" \
        @"$build/test-sources.txt"
    java -cp "$build/classes:$build/test-classes" org.flinkagents.bridge.BridgeSelfTest
fi

printf 'Manifest-Version: 1.0\nImplementation-Title: flink-agents-bridge\nImplementation-Version: 1\n' \
    > "$build/MANIFEST.MF"
tmp_jar="$out_jar.tmp"
jar --create --file "$tmp_jar" --manifest "$build/MANIFEST.MF" -C "$build/classes" .
mv "$tmp_jar" "$out_jar"
echo "built $out_jar"
