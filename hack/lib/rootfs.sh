# shellcheck shell=bash
# Debian bookworm root filesystems for images, from Debian's packages with debootstrap:
# every image built here that needs more than static binaries starts from one.
# Sourced after common.sh, not run; needs root.

DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

# debian_rootfs NAME PACKAGES prints the folder IMAGE_CACHE/rootfs-NAME holding a minimal
# Debian bookworm with PACKAGES (comma-separated). debootstrap, the slow part, runs once:
# the folder is kept until remove_rootfs, so that a failed build resumes after it.
debian_rootfs() {
  local rootfs=${IMAGE_CACHE}/rootfs-$1 logfile=${IMAGE_CACHE}/debootstrap-$1.log
  if [ ! -f "${rootfs}.bootstrapped" ]; then
    log "bootstrapping $1 from Debian bookworm (a few minutes)"
    # A failed debootstrap may leave /proc or /sys mounted in it.
    rm -rf --one-file-system "$rootfs"
    mkdir -p "$rootfs"
    debootstrap --variant=minbase --arch="$(dpkg --print-architecture)" --include="$2" \
      bookworm "$rootfs" "$DEBIAN_MIRROR" >"$logfile" 2>&1 || die "debootstrap failed: see ${logfile}"
    touch "${rootfs}.bootstrapped"
  fi
  echo "$rootfs"
}

# slim_rootfs ROOTFS drops what an image does not need of a debian_rootfs: apt's caches
# and package lists, and the documentation.
slim_rootfs() {
  chroot "$1" apt-get clean
  rm -rf "$1"/var/lib/apt/lists/* "$1"/usr/share/doc/* "$1"/usr/share/man/* "$1"/usr/share/info/*
}

# remove_rootfs ROOTFS removes a root filesystem folder once its image is made.
remove_rootfs() { rm -rf --one-file-system "$1" "${1}.bootstrapped"; }

# empty_rootfs NAME prints a fresh folder IMAGE_CACHE/rootfs-NAME for an image of static
# binaries: only /etc and a world-writable /tmp.
empty_rootfs() {
  local rootfs=${IMAGE_CACHE}/rootfs-$1
  rm -rf "$rootfs"
  mkdir -p "$rootfs/etc" "$rootfs/tmp"
  chmod 1777 "$rootfs/tmp"
  echo "$rootfs"
}

# rootfs_tar ROOTFS writes ROOTFS as a tar stream on stdout, owners by number: the
# image's passwd, not this machine's, names them.
rootfs_tar() { tar -C "$1" --numeric-owner -c .; }
