package p

func platform() string { return "linux" }
