// Package cpu measures Pcpu, the CPU load that Cisco's broadband call
// admission control turns into a load charge (`call admission load
// <multiplier> <lifetime>`) and that the "new model" CPU gate compares with
// its threshold.
//
// Pcpu counts user, nice and system time only. Hard and soft interrupt time
// is left out on purpose: the XDP program runs in the NIC's NAPI softirq,
// so the work of dropping a flood of calls is softirq time. Were it counted,
// a flood would raise Pcpu, which raises the load charge, which rejects more
// calls, which is yet more softirq work: the filter would feed back on
// itself and reject calls because it is busy rejecting calls. Steal (time a
// hypervisor gave to someone else) and idle/iowait are not work done here.
//
// A Source is one of:
//
//   - system: the aggregate line of /proc/stat; busy is user+nice+system,
//     the total is those plus idle, iowait, irq, softirq and steal. Guest
//     time is already inside user, so it is not added again.
//   - process:NAME: every process whose comm is NAME, busy being utime+stime
//     of /proc/PID/stat.
//   - cgroup:PATH: a cgroup v2 directory below the cgroup2 mount, busy being
//     user_usec+system_usec of its cpu.stat.
//
// For process and cgroup sources the total is elapsed wall time times the
// number of online CPUs (the cpuN lines of /proc/stat), not the time of one
// CPU. Every source thus reads 0–100 % of the whole machine and one
// threshold in the config means the same thing whichever source is chosen;
// a process pinning one core of four reads 25 %, not 100 %.
//
// The kernel keeps interrupt time out of utime/stime (and so out of the
// cgroup figures) only with CONFIG_IRQ_TIME_ACCOUNTING; without it a tick
// that lands in softirq while the process runs is charged to its stime. The
// system source is exact either way, since /proc/stat books such ticks as
// softirq.
//
// Readings are cumulative from the moment the Sampler was made; only their
// differences mean anything, and Percent clamps each to [0, 100] % so that a
// counter going back (an exited process, an iowait correction) cannot read
// as a negative or enormous load.
package cpu
