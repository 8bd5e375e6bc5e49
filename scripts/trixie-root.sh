# Sourced by scripts/package-arm64 and scripts/lambda-arm64: a Debian 13
# root in .tools/trixie (debootstrap --variant=minbase trixie) with
# rustc-web, cargo-web and libstd-rust-web-dev:arm64 (1.96) and
# gcc-aarch64-linux-gnu as the linker and C compiler, because `rustup target
# add` cannot download here and Debian 12's rustc-web (1.85) is older than
# the workspace needs. Defines `say`, `in_root` (a command in the root),
# `copy_sources` (the working tree into /src/ingester of the root) and
# `build_arm64 ARGS` (cargo build --release --target aarch64 there); unmounts
# what it mounted on exit. Needs root (chroot, mount) and `$root`.
[ "$(id -u)" -eq 0 ] || { echo "$(basename "$0"): needs root (debootstrap, chroot)" >&2; exit 1; }
trixie="$root/.tools/trixie"
target=aarch64-unknown-linux-gnu
started=$(date +%s)
say() { echo "[$(( $(date +%s) - started )) s] $*"; }

if ! command -v debootstrap >/dev/null; then
  (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y debootstrap) >/dev/null
fi
if [ ! -x "$trixie/usr/bin/apt-get" ]; then
  say "debootstrap trixie into $trixie"
  debootstrap --variant=minbase trixie "$trixie" http://deb.debian.org/debian >/dev/null
fi

mounted=()
unmount_root() {
  for m in "${mounted[@]}"; do umount "$m" 2>/dev/null || true; done
}
trap unmount_root EXIT INT TERM
for fs in proc sys dev; do
  mountpoint -q "$trixie/$fs" || { mount --bind "/$fs" "$trixie/$fs"; mounted+=("$trixie/$fs"); }
done
cp /etc/resolv.conf "$trixie/etc/resolv.conf"
# This machine's CA bundle (its network may present its own CA), and its
# crates.io cache, so that cargo in the root downloads what it lacks only.
cp /etc/ssl/certs/ca-certificates.crt "$trixie/etc/host-ca-certificates.crt"
cargo_home=${CARGO_HOME:-$HOME/.cargo}
mkdir -p "$cargo_home/registry" "$trixie/root/.cargo/registry"
mountpoint -q "$trixie/root/.cargo/registry" || {
  mount --bind "$cargo_home/registry" "$trixie/root/.cargo/registry"
  mounted+=("$trixie/root/.cargo/registry")
}
in_root() {
  chroot "$trixie" env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root \
    CARGO_HTTP_CAINFO=/etc/host-ca-certificates.crt "$@"
}

if ! in_root sh -c 'command -v cargo && command -v aarch64-linux-gnu-gcc && command -v qemu-aarch64' >/dev/null 2>&1 \
   || ! in_root dpkg -s libstd-rust-web-dev:arm64 >/dev/null 2>&1; then
  say "installing rustc-web, cargo-web, libstd-rust-web-dev:arm64, gcc-aarch64-linux-gnu, qemu-user in trixie"
  in_root dpkg --add-architecture arm64
  in_root apt-get update -q >/dev/null
  in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    rustc-web cargo-web libstd-rust-web-dev:arm64 gcc-aarch64-linux-gnu libc6-dev-arm64-cross \
    qemu-user ca-certificates curl >/dev/null
fi
say "$(in_root rustc --version), $(in_root cargo --version)"

# The sources as committed (and the working tree's changes), without the
# build output and tools; what an earlier copy had and the tree no longer
# has is removed (its build output is kept, for the next build).
copy_sources() {
  src="$trixie/src/ingester"
  mkdir -p "$src"
  find "$src" -mindepth 1 -maxdepth 1 ! -name target -exec rm -rf {} +
  tar -C "$root" --exclude=./target --exclude=./.tools --exclude=./.git --exclude=./.aws-sam -cf - . \
    | tar -C "$src" -xf -
}

# cargo build --release for arm64 in the root; the binaries land in
# "$src/target/$target/release".
build_arm64() {
  in_root sh -c "cd /src/ingester && \
    CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
    CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar \
    cargo build --release --locked --target $target --config profile.release.strip=true $*"
}
