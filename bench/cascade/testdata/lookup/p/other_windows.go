package p

func platform() string { return "windows" }
