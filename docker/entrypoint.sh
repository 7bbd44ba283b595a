#!/usr/bin/env bash
# Entry point of the flink-agents image.
#
#   jobmanager   run a standalone-session JobManager in the foreground
#   taskmanager  run a TaskManager in the foreground
#   anything     run it as a command (e.g. `flink-agents submit ...`, `flink run ...`)
#
# Extra Flink options can be given as FLINK_PROPERTIES (YAML lines, as in the official
# Flink images); they are appended to a copy of the configuration.
set -euo pipefail

: "${FLINK_HOME:?FLINK_HOME must point to the pyflink package folder}"
: "${FLINK_CONF_DIR:=/opt/flink-agents/conf}"
export FLINK_CONF_DIR

if [[ -n "${FLINK_PROPERTIES:-}" ]]; then
    conf_copy="$(mktemp -d)"
    cp -r "${FLINK_CONF_DIR}/." "${conf_copy}/"
    printf '\n%s\n' "${FLINK_PROPERTIES}" >> "${conf_copy}/config.yaml"
    export FLINK_CONF_DIR="${conf_copy}"
fi
mkdir -p "${FLINK_LOG_DIR:-/tmp/flink-log}"

case "${1:-}" in
    jobmanager)
        shift
        exec "${FLINK_HOME}/bin/jobmanager.sh" start-foreground "$@"
        ;;
    taskmanager)
        shift
        exec "${FLINK_HOME}/bin/taskmanager.sh" start-foreground "$@"
        ;;
    "")
        echo "usage: entrypoint.sh jobmanager|taskmanager|<command ...>" >&2
        exit 2
        ;;
    *)
        exec "$@"
        ;;
esac
