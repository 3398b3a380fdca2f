package datasets

import (
	"fmt"
	"strconv"
	"strings"
)

// EmptyClassError reports classes of 0..C−1 that have no rows. A label
// scheme with gaps (labels 0 and 2 only), a file whose every label is 1, or
// a typo such as a label of 1000000 all make classes the data do not back:
// a model would carry a latent function per empty class (a million for the
// typo) and a one-class "classifier" is no result.
type EmptyClassError struct {
	// Name is the file or data set, the message's prefix.
	Name string
	// C is the number of classes the labels make.
	C int
	// Empty and Present are the classes without and with rows, ascending.
	Empty, Present []int
	// Hint says what to do when at least two classes have rows; empty
	// uses "number the classes 0..C−1 with every class present". With
	// fewer than two the hint is always that a classifier needs two.
	Hint string
}

// Error names the data set, the classes without rows and the hint.
func (e *EmptyClassError) Error() string {
	var b strings.Builder
	if e.Name != "" {
		b.WriteString(e.Name + ": ")
	}
	if len(e.Empty) == 1 {
		fmt.Fprintf(&b, "class %s has no rows", ClassList(e.Empty))
	} else {
		fmt.Fprintf(&b, "classes %s have no rows", ClassList(e.Empty))
	}
	fmt.Fprintf(&b, ": the labels make %d classes (0..%d), but ", e.C, e.C-1)
	switch len(e.Present) {
	case 0:
		b.WriteString("there are no rows")
	case 1:
		fmt.Fprintf(&b, "only %s occurs", ClassList(e.Present))
	default:
		fmt.Fprintf(&b, "only %s occur", ClassList(e.Present))
	}
	hint := e.Hint
	if hint == "" {
		hint = "number the classes 0..C−1 with every class present"
	}
	if len(e.Present) < 2 {
		hint = "a classifier needs rows of at least two classes"
	}
	return b.String() + "; " + hint
}

// MissingClasses returns an *EmptyClassError naming the classes of 0..C−1
// without rows in d (name prefixes the message, hint is
// EmptyClassError.Hint), or nil when every class has rows.
func (d *Dataset) MissingClasses(name, hint string) error {
	counts := d.ClassCounts()
	var empty, present []int
	for c, n := range counts {
		if n == 0 {
			empty = append(empty, c)
		} else {
			present = append(present, c)
		}
	}
	if len(empty) == 0 {
		return nil
	}
	return &EmptyClassError{Name: name, C: d.C, Empty: empty, Present: present, Hint: hint}
}

// ClassList writes ascending class indices for a message: runs of three or
// more as ranges ("2–999999"), the last item joined by "and" ("0, 1 and
// 7"), and at most eight items, then how many there are in all.
func ClassList(cls []int) string {
	var items []string
	for i := 0; i < len(cls); {
		j := i
		for j+1 < len(cls) && cls[j+1] == cls[j]+1 {
			j++
		}
		if j-i >= 2 {
			items = append(items, strconv.Itoa(cls[i])+"–"+strconv.Itoa(cls[j]))
		} else {
			for k := i; k <= j; k++ {
				items = append(items, strconv.Itoa(cls[k]))
			}
		}
		i = j + 1
	}
	const most = 8
	switch {
	case len(items) == 0:
		return "none"
	case len(items) == 1:
		return items[0]
	case len(items) > most:
		return strings.Join(items[:most], ", ") + fmt.Sprintf(", … (%d in all)", len(cls))
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
