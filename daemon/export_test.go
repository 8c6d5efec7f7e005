package daemon

// RotateFiles is rotateFiles, for the tests of package daemon_test.
var RotateFiles = rotateFiles
