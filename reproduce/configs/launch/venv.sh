# Sourced by the launch scripts: python, accelerate and trl must be the project's venv's (docs/gpu.md, "Install").
# An active venv or conda environment is used as it is; otherwise <repository>/.venv is activated (VENV=/other/venv
# names another). No venv at all is a one-line error, not a `python` from PATH with other packages.
if [[ -z ${VIRTUAL_ENV:-} && -z ${CONDA_PREFIX:-} ]]; then
  VENV=${VENV:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)/.venv}
  if [[ ! -f $VENV/bin/activate ]]; then
    echo "no venv at $VENV: create it (docs/gpu.md, Install), activate one, or set VENV=/path/to/venv" >&2
    exit 1
  fi
  # shellcheck disable=SC1091
  source "$VENV/bin/activate"
fi
