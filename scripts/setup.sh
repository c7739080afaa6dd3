#!/usr/bin/env bash
# Creates .venv and installs gregor into it; with --test also the test dependencies, kcat, Java and
# Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
extras=""
if [ "${1:-}" = "--test" ]; then extras="[test]"; fi
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
  .venv/bin/pip install -q --upgrade pip
fi
# The distribution was named "gregor" before it became gregor-streaming (docs/packaging.md): an older
# .venv holds it under that name, and both would own the `gregor` command.
if .venv/bin/pip show -q gregor >/dev/null 2>&1; then .venv/bin/pip uninstall -q -y gregor; fi
.venv/bin/pip install -q -e ".${extras}"
if [ -n "$extras" ] && ! command -v kcat >/dev/null 2>&1; then
  echo "installing kcat (Debian package) for the interop tests" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq kcat >/dev/null
fi
if [ -n "$extras" ] && ! command -v openssl >/dev/null 2>&1; then
  echo "installing openssl (Debian package): the security tests make their certificates with it" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq openssl >/dev/null
fi
if [ -n "$extras" ] && ! command -v java >/dev/null 2>&1; then
  echo "installing a Java 17 runtime (Debian package) for the Spark tests: pyspark 4 needs Java 17+" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi
if [ -n "$extras" ] && [ ! -x /usr/bin/chromium ]; then
  echo "installing Chromium (Debian package) for the web console's browser tests (driven by Playwright)" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium >/dev/null
fi
