#!/bin/sh
# A test whose dependency this build lacks: meson reports it as skipped,
# by name (exit 77), with what is missing and how to get it.
echo "skipped: $*"
exit 77
