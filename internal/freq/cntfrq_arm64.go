package freq

// cntfrq reads CNTFRQ_EL0, the generic timer's frequency in Hz, which
// user space may read (cntfrq_arm64.s).
func cntfrq() uint64
