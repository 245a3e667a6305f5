package sampler

// SetProcRoot points the samplers created after it at another proc mount
// (a test's hidepid=1 instance).
func SetProcRoot(root string) { procRoot = root }
