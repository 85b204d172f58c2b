# Shared by scripts/demo and scripts/test: install Debian packages that are
# missing, as root or through sudo.
install_packages() {
	local missing=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	local sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	echo "installing: ${missing[*]}" >&2
	$sudo apt-get update -q
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q -o DPkg::Lock::Timeout=600 "${missing[@]}"
}

require_go() {
	if ! command -v go >/dev/null; then
		echo "agentgw needs Go 1.26 or newer on PATH (https://go.dev/doc/install)" >&2
		exit 1
	fi
}
