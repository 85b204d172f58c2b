package compstream

import (
	"bufio"
	"bytes"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// ReleaseMemory is what the gateway gives back when its stream has been
// quiet for a while: the free Go heap (debug.FreeOSMemory), and the
// page-table entries of the executable's read-only mappings.
//
// Most of an idle gateway's resident set is its own binary: the kernel maps
// the neighbouring pages of the page cache on every fault (fault-around),
// so after some load 14-15 MB of text and rodata are resident although an
// idle spell touches a small part of them. madvise(MADV_DONTNEED) on those
// mappings drops the entries but not the pages, which stay in the page
// cache: the next request maps back, with minor faults, what it touches.
// Only mappings that hold no page of their own (no copy-on-write page, as
// a relocated PIE's read-only data would) are dropped, so the contents seen
// afterwards are exactly the file's.
func ReleaseMemory() {
	debug.FreeOSMemory()
	for _, m := range readOnlyMappings() {
		_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, m.start, m.end-m.start, syscall.MADV_DONTNEED)
	}
}

// mapping is an address range [start, end).
type mapping struct{ start, end uintptr }

var (
	roOnce     sync.Once
	roMappings []mapping
)

// readOnlyMappings returns the executable's read-only file mappings that
// hold no anonymous (copy-on-write) page, found once in /proc/self/smaps.
func readOnlyMappings() []mapping {
	roOnce.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			return
		}
		f, err := os.Open("/proc/self/smaps")
		if err != nil {
			return
		}
		defer f.Close()
		var cur *mapping
		clean := false
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Bytes()
			if fields := bytes.Fields(line); len(fields) >= 5 && bytes.IndexByte(fields[0], '-') > 0 && !bytes.HasSuffix(fields[0], []byte(":")) {
				// A mapping's header: "start-end perms offset dev inode path".
				if cur != nil && clean {
					roMappings = append(roMappings, *cur)
				}
				cur, clean = nil, false
				perms := string(fields[1])
				if len(fields) < 6 || string(fields[5]) != exe || strings.Contains(perms, "w") || !strings.HasSuffix(perms, "p") {
					continue
				}
				lo, hi, ok := strings.Cut(string(fields[0]), "-")
				start, err1 := strconv.ParseUint(lo, 16, 64)
				end, err2 := strconv.ParseUint(hi, 16, 64)
				if !ok || err1 != nil || err2 != nil {
					continue
				}
				cur, clean = &mapping{uintptr(start), uintptr(end)}, true
				continue
			}
			if cur != nil && bytes.HasPrefix(line, []byte("Anonymous:")) {
				clean = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(string(line[len("Anonymous:"):])), "kB")) == "0"
			}
		}
		if cur != nil && clean {
			roMappings = append(roMappings, *cur)
		}
	})
	return roMappings
}
