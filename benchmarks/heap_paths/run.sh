#!/usr/bin/env bash
# Build (once) and run HeapPaths.java over a heap dump; see its header for the arguments.
# Needs Java 17 and Maven (the shark heap-graph library comes from Maven Central).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$here/target"
mkdir -p "$build"
if [[ ! -f "$build/classpath.txt" ]]; then
  mvn -q -f "$here/pom.xml" dependency:build-classpath -Dmdep.outputFile="$build/classpath.txt"
fi
classpath="$(cat "$build/classpath.txt")"
if [[ ! -f "$build/classes/HeapPaths.class" || "$here/HeapPaths.java" -nt "$build/classes/HeapPaths.class" ]]; then
  javac -cp "$classpath" -d "$build/classes" "$here/HeapPaths.java"
fi
exec java -Xmx6g -cp "$build/classes:$classpath" HeapPaths "$@"
