package localpg

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// ErrDevLogNeedsRoot refuses Config.DevLog to an ordinary user.
var ErrDevLogNeedsRoot = errors.New("a server whose syslog() reaches logbench's receiver must start as root: " +
	"logbench gives it a private mount namespace where /dev/log is the receiver's socket " +
	"(run logbench as root, or measure the Syslog destination in a cluster)")

// devLogScript runs as root in a private mount namespace (unshare --mount): it puts a
// tmpfs over /dev holding what /dev held, binds the socket $1 at /dev/log there (glibc's
// syslog() writes to _PATH_LOG, /dev/log, and nowhere else), and runs the rest of its
// arguments as uid $2 and gid $3, dying with its parent. Nothing changes outside the
// namespace: the machine's /dev keeps whatever /dev/log it has, or none.
const devLogScript = `set -eu
socket=$1 uid=$2 gid=$3
shift 3
real=$(mktemp -d)
mount --rbind /dev "$real"
mount -t tmpfs -o mode=0755,nosuid tmpfs /dev
for path in "$real"/*; do
	name=${path##*/}
	if [ -L "$path" ]; then
		ln -s "$(readlink "$path")" "/dev/$name"
	elif [ -d "$path" ]; then
		mkdir "/dev/$name"
		mount --rbind "$path" "/dev/$name"
	elif [ "$name" != log ]; then
		: >"/dev/$name"
		mount --bind "$path" "/dev/$name"
	fi
done
umount -l "$real"
rmdir "$real"
: >/dev/log
mount --bind "$socket" /dev/log
exec setpriv --reuid="$uid" --regid="$gid" --clear-groups --pdeathsig=INT -- "$@"
`

// devLogCommand returns the command running binary with args as owner in a private
// mount namespace where /dev/log is socket. owner is nil when logbench does not run as
// root, which the namespace needs.
func (s *Server) devLogCommand(
	socket string, owner *syscall.Credential, binary string, args ...string,
) (*exec.Cmd, error) {
	if owner == nil || os.Geteuid() != 0 {
		return nil, ErrDevLogNeedsRoot
	}
	for _, tool := range []string{"unshare", "setpriv", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("starting a server whose syslog() reaches %s needs %s (util-linux): %w", socket, tool, err)
		}
	}
	wrapper := append([]string{"--mount", "--propagation", "private", "sh", "-c", devLogScript, "sh",
		socket, strconv.FormatUint(uint64(owner.Uid), 10), strconv.FormatUint(uint64(owner.Gid), 10), binary}, args...)
	cmd := exec.Command("unshare", wrapper...)
	cmd.Dir = s.dir
	cmd.SysProcAttr = childAttributes(nil)
	return cmd, nil
}
