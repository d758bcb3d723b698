#!/usr/bin/env bash
# `make dist`: the release artifacts of BUILD (default: build) in BUILD/dist/:
#   sluice-VERSION-linux-ARCH.tar.gz   the stripped binary, its default config, the systemd unit
#   sluice-VERSION-linux-ARCH.cdx.json a CycloneDX 1.5 SBOM: every shared library the binary
#                                      links (from ldd) or opens at run time (libpq), with the
#                                      Debian package that ships it and
#                                      that package's installed version (dpkg -S, dpkg-query)
#   sluice_VERSION_ARCH.deb            copied from `make deb`
#   SHA256SUMS                         of the three above (sha256sum -c SHA256SUMS)
# Timestamps come from the last commit (SOURCE_DATE_EPOCH), so the same tree packs the same bytes.
set -euo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/.."
bin="$BUILD/sluice"
[ -x "$bin" ] || { echo "dist: no $bin (make deb builds it)" >&2; exit 1; }

version=$("$bin" version | awk '{print $NF}')
arch=$(dpkg --print-architecture)
name="sluice-$version-linux-$arch"
out="$BUILD/dist"
rm -rf "$out"
mkdir -p "$out/$name"
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

deb="$BUILD/sluice_${version}_${arch}.deb"
[ -f "$deb" ] || { echo "dist: no $deb (run make deb)" >&2; exit 1; }
cp "$deb" "$out/"

# The tarball: what the .deb installs, in one directory.
strip --strip-unneeded -o "$out/$name/sluice" "$bin"
cp deploy/debian/sluice.yaml deploy/systemd/sluice.service README.md "$out/$name/"
tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
  -C "$out" -czf "$out/$name.tar.gz" "$name"

# The SBOM. Each library ldd resolves is looked up in dpkg's file lists; on a merged-/usr system
# the path ldd prints (/lib/...) may be the one dpkg does not know, so the /usr twin and the
# resolved path are tried too. A library no package owns fails the build: the SBOM lists all.
owner() {
  local p=$1 c
  for c in "$p" "${p/#\/usr\/lib\//\/lib\/}" "${p/#\/lib\//\/usr\/lib\/}" "$(readlink -f "$p")"; do
    dpkg -S "$c" 2>/dev/null | grep -v '^diversion' | head -1 | sed 's/: .*//' | grep . && return 0
  done
  return 1
}
json() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }

sha=$(sha256sum "$out/$name/sluice" | cut -d' ' -f1)
# A serial number derived from the binary: the same build, the same SBOM.
uuid="${sha:0:8}-${sha:8:4}-5${sha:13:3}-8${sha:17:3}-${sha:20:12}"
timestamp=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
debian_version=$(. /etc/os-release && echo "${VERSION_ID:-unknown}")

# The sonames an ELF file asks for (DT_NEEDED): the binary's are "direct", the rest of what ldd
# resolves is what those libraries pull in ("transitive"); the dependency graph follows NEEDED.
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
direct=" $(needed "$bin" | tr '\n' ' ') "
# The libraries the binary opens itself when a feature needs them (dlopen: libpq for a
# PostgreSQL store, src/store/postgres/LibPq.cpp) are "runtime", and what they pull in is listed too.
runtime=" libpq.so.5 "
runtime_paths=()
for soname in $runtime; do
  p=$(ldconfig -p | awk -v n="$soname" '$1 == n {print $NF; exit}')
  [ -n "$p" ] || { echo "dist: $soname (opened at run time) is not installed" >&2; exit 1; }
  runtime_paths+=("$soname $p")
done
declare -A path_of=()
while read -r soname path; do path_of[$soname]=$path; done \
  < <({ ldd "$bin"; for rp in "${runtime_paths[@]}"; do echo "	${rp% *} => ${rp#* } (0x0)"; ldd "${rp#* }"; done; } |
    awk '/=> \// {print $1, $3} /^\t\/[^ ]+ \(/ {n=$1; sub(".*/", "", n); print n, $1}' | sort -u)

components=()
graph=()
roots=()
for soname in $(printf '%s\n' "${!path_of[@]}" | sort); do
  path=${path_of[$soname]}
  pkg=$(owner "$path") || { echo "dist: no Debian package owns $path ($soname)" >&2; exit 1; }
  pname=${pkg%%:*}
  pver=$(dpkg-query -W -f='${Version}' "$pkg")
  parch=$(dpkg-query -W -f='${Architecture}' "$pkg")
  linkage=transitive
  case "$direct" in *" $soname "*) linkage=direct; roots+=("\"lib:$(json "$soname")\"") ;; esac
  case "$runtime" in *" $soname "*) linkage=runtime; roots+=("\"lib:$(json "$soname")\"") ;; esac
  components+=("$(printf '    {"type": "library", "bom-ref": "lib:%s", "name": "%s", "version": "%s",
      "purl": "pkg:deb/debian/%s@%s?arch=%s&distro=debian-%s",
      "properties": [{"name": "sluice:debian:package", "value": "%s"}, {"name": "sluice:file", "value": "%s"}, {"name": "sluice:linkage", "value": "%s"}]}' \
    "$(json "$soname")" "$(json "$soname")" "$(json "$pver")" "$(json "$pname")" "$(json "$pver")" "$parch" "$debian_version" \
    "$(json "$pname")" "$(json "$path")" "$linkage")")
  deps=()
  for n in $(needed "$path"); do [ -n "${path_of[$n]:-}" ] && deps+=("\"lib:$(json "$n")\""); done
  graph+=("$(printf '    {"ref": "lib:%s", "dependsOn": [%s]}' "$(json "$soname")" "$(IFS=,; echo "${deps[*]:-}" | sed 's/,/, /g')")")
done

{
  printf '{\n  "bomFormat": "CycloneDX",\n  "specVersion": "1.5",\n  "serialNumber": "urn:uuid:%s",\n  "version": 1,\n' "$uuid"
  printf '  "metadata": {\n    "timestamp": "%s",\n' "$timestamp"
  printf '    "tools": {"components": [{"type": "application", "name": "sluice scripts/dist.sh"}]},\n'
  printf '    "component": {"type": "application", "bom-ref": "sluice", "name": "sluice", "version": "%s",\n' "$version"
  printf '      "hashes": [{"alg": "SHA-256", "content": "%s"}]}\n  },\n' "$sha"
  printf '  "components": [\n'
  (IFS=$'\n'; printf '%s\n' "${components[*]}" | sed '$!s/}$/},/')
  printf '  ],\n  "dependencies": [\n    {"ref": "sluice", "dependsOn": [%s]},\n' "$(IFS=,; echo "${roots[*]}" | sed 's/,/, /g')"
  (IFS=$'\n'; printf '%s\n' "${graph[*]}" | sed '$!s/$/,/')
  printf '  ]\n}\n'
} >"$out/$name.cdx.json"

(cd "$out" && sha256sum "$name.tar.gz" "$name.cdx.json" "$(basename "$deb")" >SHA256SUMS)
rm -rf "${out:?}/$name"
echo "dist: $out/$name.tar.gz, $name.cdx.json ($((${#components[@]})) libraries), $(basename "$deb"), SHA256SUMS"
