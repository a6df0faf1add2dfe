//go:build !unix

package trusted

import "os"

const checkOpenFlags = os.O_RDONLY
