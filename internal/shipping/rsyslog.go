package shipping

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/logbench/logbench/api/v1alpha1"
)

// A Syslog destination with receiver Rsyslog has rsyslogd on the syslog socket instead
// of Fluent Bit: the system daemon with Debian's configuration, which writes the
// messages it keeps to a file that the postgres container sees, for the agent to count
// the records in it through the server as in the logging collector's files.
const (
	// RsyslogImage is the receiver's image when the destination names none: Debian
	// bookworm's rsyslog package, rsyslogd its entrypoint.
	RsyslogImage = "ghcr.io/logbench/rsyslog:8.2302.0"
	// RsyslogDirectory holds the one file of the messages rsyslog kept, on the syslog
	// volume, which the postgres container mounts read-only at the same path.
	RsyslogDirectory = syslogMountPath + "/" + rsyslogDirectory
	rsyslogDirectory = "rsyslog"
	rsyslogFile      = "messages"
	// rsyslogNotices holds rsyslog's own messages, those saying it drops a process's
	// messages among them, on the syslog volume apart from the file the records are
	// counted in.
	rsyslogNotices = "rsyslog-notices.log"
)

// debianModes are the modes of the files and folders Debian's rsyslog.conf has rsyslog
// create ($FileCreateMode, $DirCreateMode): the postgres user, in the files' group,
// reads them.
const debianModes = `fileCreateMode="0640" dirCreateMode="0755"`

// UsesRsyslog tells whether d is a Syslog destination whose receiver is rsyslog.
func UsesRsyslog(d v1alpha1.Destination) bool {
	return d.Type == v1alpha1.DestinationSyslog && d.EffectiveSyslog().Receiver == v1alpha1.SyslogRsyslog
}

// rsyslogConfig is rsyslogd's configuration for the target: Debian bookworm's
// /etc/rsyslog.conf but for what running unprivileged beside PostgreSQL, and writing
// where logbench counts, needs. Every setting it leaves out keeps rsyslog's default,
// imuxsock's rate limiting among them unless the destination sets rateLimit.
func rsyslogConfig(t Target) []byte {
	return rsyslogConfigIn(t, syslogMountPath)
}

// rsyslogConfigIn is rsyslogConfig with the syslog volume at volume.
func rsyslogConfigIn(t Target, volume string) []byte {
	s := t.Destination.EffectiveSyslog()
	imuxsock := fmt.Sprintf(`module(load="imuxsock" SysSock.Name="%s/%s"`, volume, syslogSocket)
	if limit := s.RateLimit; limit != nil {
		imuxsock += fmt.Sprintf(` SysSock.RateLimit.Interval="%d" SysSock.RateLimit.Burst="%d"`,
			limit.IntervalSeconds, limit.Burst)
	}
	lines := []string{
		"# rsyslogd for the syslog messages of logbench's destination " + t.Destination.Name + ", as Debian",
		"# bookworm's /etc/rsyslog.conf sets it up but for what differs here:",
		"# - imuxsock listens on the socket the postgres container sees as /dev/log; imklog,",
		"#   which needs privileges to read the kernel's log, is not loaded;",
		"# - rsyslog's own messages go through the rules below: this container has no /dev/log;",
		"# - the facility's messages are written as received, control characters escaped as",
		"#   rsyslog always does, to a file of their own, where logbench counts the records;",
		"#   the files' owner and group are the container's, which cannot change them, and",
		"#   their modes Debian's, set on each action: the legacy directives do not reach them.",
		`global(processInternalMessages="on")`,
		imuxsock + ")",
		`template(name="logbench_message" type="string" string="%rawmsg%\n")`,
		fmt.Sprintf(`%s.* action(type="omfile" file="%s/%s/%s" template="logbench_message" %s)`,
			strings.ToLower(string(s.Facility)), volume, rsyslogDirectory, rsyslogFile, debianModes),
		fmt.Sprintf(`syslog.* action(type="omfile" file="%s/%s" %s)`, volume, rsyslogNotices, debianModes),
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

// rsyslogPodPatch adds rsyslogd, with its configuration from the ConfigMap configMap
// (ConfigKey), as the receiver of the target's instance pods, and its directory
// read-only to the postgres container, where the agent reads it through the server.
// rsyslogd serves no port: its socket's existence is its startup probe.
func rsyslogPodPatch(t Target, configMap string) []PatchOperation {
	shipper := t.Destination.EffectiveShipper()
	container := corev1.Container{
		Name:  ContainerName,
		Image: t.Image(),
		// In the foreground, without a pid file: the root file system is read-only.
		Args: []string{"-n", "-i", "NONE", "-f", configMountPath + "/" + ConfigKey},
		VolumeMounts: []corev1.VolumeMount{
			NoAPITokenMount,
			{Name: configVolume, MountPath: configMountPath, ReadOnly: true},
		},
		Resources:       shipper.Resources,
		SecurityContext: SidecarSecurityContext(ShipperUID, PostgresGID),
	}
	started := corev1.ProbeHandler{Exec: &corev1.ExecAction{
		Command: []string{"/usr/bin/test", "-S", syslogMountPath + "/" + syslogSocket},
	}}
	return slices.Concat([]PatchOperation{
		Add("/spec/volumes/-", corev1.Volume{Name: configVolume, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}},
		}}),
		Add(postgresContainerPath+"/volumeMounts/-", corev1.VolumeMount{
			Name: syslogVolume, MountPath: syslogMountPath, ReadOnly: true,
		}),
	}, syslogReceiverPatch(container, started))
}

// RsyslogReason explains what a destination whose receiver is rsyslog lost: rsyslog
// reports no count of what it kept, so the records missing from its file are named
// against its rate limiting when the destination sets one.
func RsyslogReason(d v1alpha1.Destination) string {
	limit := d.EffectiveSyslog().RateLimit
	if limit == nil {
		return "rsyslog did not write them: its rate limiting is off, so they were lost before it read them " +
			"(syslog() drops what it cannot send) or it could not write them"
	}
	return fmt.Sprintf("rsyslog did not write them: its imuxsock keeps %d messages of each process in %d s "+
		"(SysSock.RateLimit.Burst and Interval) and drops the rest; its notices are in %s/%s", limit.Burst,
		limit.IntervalSeconds, syslogMountPath, rsyslogNotices)
}
