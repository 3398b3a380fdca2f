package datasets

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// vegaSample is a few lines in the format of vega's flights-3m.csv (the
// first five are the file's own first rows), with a midnight 2400
// departure, a zero delay and a 31st day added.
const vegaSample = `date,delay,distance,origin,destination
01010001,14,405,MCI,MDW
01010530,-11,370,LAX,PHX
01010540,5,389,ONT,SMF
01010600,-5,337,OAK,LAX
01010600,3,2231,MSY,SAN
01312400,0,1014,ATL,DEN
02151245,27,719,SFO,SEA
03010735,-2,1846,JFK,LAX
03311959,120,602,ORD,DCA
02290815,-7,1303,DFW,LGA
01020900,1,280,BOS,LGA
`

func TestAirlineParseVegaFlight(t *testing.T) {
	good := []struct {
		rec  string
		x    [4]float64
		y    int
		name string
	}{
		{"01010530,-11,370,LAX,PHX", [4]float64{1, 1, 5.5, 370}, 0, "early"},
		{"03311245,14,405,MCI,MDW", [4]float64{3, 31, 12.75, 405}, 1, "late"},
		{"02150000,0,100,ATL,DEN", [4]float64{2, 15, 0, 100}, 0, "on time is not delayed"},
		{"12012400,1,99.5,ATL,DEN", [4]float64{12, 1, 24, 99.5}, 1, "midnight as 2400"},
		{" 01010001 , 0.5 , 405 ,MCI,MDW", [4]float64{1, 1, 1.0 / 60, 405}, 1, "spaces and a fractional delay"},
	}
	for _, c := range good {
		x, y, err := ParseVegaFlight(7, strings.Split(c.rec, ","))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if len(x) != 4 || [4]float64(x) != c.x || y != c.y {
			t.Errorf("%s: got %v, %d; want %v, %d", c.name, x, y, c.x, c.y)
		}
	}
	bad := []struct {
		rec, want string
	}{
		{"01010530,-11,370,LAX", "has 4 fields, want 5"},
		{"01010530,-11,370,LAX,PHX,X", "has 6 fields, want 5"},
		{"1010530,-11,370,LAX,PHX", `date "1010530" is not an 8-digit`},
		{"0101x530,-11,370,LAX,PHX", `date "0101x530" is not an 8-digit`},
		{"-1010530,-11,370,LAX,PHX", `date "-1010530" is not an 8-digit`},
		{"00010530,-11,370,LAX,PHX", `date "00010530" has month 00`},
		{"13010530,-11,370,LAX,PHX", `date "13010530" has month 13`},
		{"01000530,-11,370,LAX,PHX", `date "01000530" has day 00`},
		{"01320530,-11,370,LAX,PHX", `date "01320530" has day 32`},
		{"01012530,-11,370,LAX,PHX", `date "01012530" has hour 25`},
		{"01010560,-11,370,LAX,PHX", `date "01010560" has minute 60`},
		{"01010530,abc,370,LAX,PHX", `delay "abc" is not a number`},
		{"01010530,,370,LAX,PHX", `delay "" is not a number`},
		{"01010530,NaN,370,LAX,PHX", `delay "NaN" is not a finite number`},
		{"01010530,-11,x,LAX,PHX", `distance "x" is not a number`},
		{"01010530,-11,0,LAX,PHX", `distance "0" is not positive`},
		{"01010530,-11,-370,LAX,PHX", `distance "-370" is not positive`},
		{"01010530,-11,Inf,LAX,PHX", `distance "Inf" is not a finite number`},
	}
	for _, c := range bad {
		_, _, err := ParseVegaFlight(1234, strings.Split(c.rec, ","))
		if err == nil {
			t.Errorf("%q accepted", c.rec)
			continue
		}
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Line != 1234 {
			t.Errorf("%q: error %v (%T) is not a *ParseError for line 1234", c.rec, err, err)
		}
		if msg := err.Error(); !strings.Contains(msg, AirlineFile+":1234") || !strings.Contains(msg, c.want) {
			t.Errorf("%q: error %q, want it to name %s:1234 and say %q", c.rec, msg, AirlineFile, c.want)
		}
	}
}

// airlineDataDir writes csv as <tmp>/airline/flights-3m.csv and returns
// the data directory and the CSV path.
func airlineDataDir(t *testing.T, csv string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "airline", AirlineFile)
	writeBytes(t, p, []byte(csv))
	return dir, p
}

func TestOpenAirline(t *testing.T) {
	dir, csvPath := airlineDataDir(t, vegaSample)
	cache := filepath.Join(filepath.Dir(csvPath), "flights-3m.s5.t0.25.rows")
	builds := airlineBuilds.Load()

	rs, isTest, err := OpenAirline(dir, 5, 0.25)
	if err != nil {
		t.Fatal(err)
	}
	if rs.N() != 11 || rs.D() != 4 || rs.C() != 2 {
		t.Errorf("N, D, C = %d, %d, %d; want 11, 4, 2", rs.N(), rs.D(), rs.C())
	}
	if got := airlineBuilds.Load() - builds; got != 1 {
		t.Errorf("first open built %d times, want 1", got)
	}
	if rs.Path() != cache {
		t.Errorf("cache at %s, want %s", rs.Path(), cache)
	}
	// The stored statistics are those of the training rows of the split.
	var sum float64
	train := 0
	want := []float64{405, 370, 389, 337, 2231, 1014, 719, 1846, 602, 1303, 280}
	for i, d := range want {
		if !isTest(i) {
			sum += d
			train++
		}
	}
	if train == 0 || train == len(want) {
		t.Fatalf("split of 11 rows has %d training rows; pick another seed for the test", train)
	}
	if m := rs.Mean()[3]; math.Abs(m-sum/float64(train)) > 1e-9 {
		t.Errorf("mean distance %v, want %v over %d training rows", m, sum/float64(train), train)
	}
	ds, err := rs.Sample([]int{5, 1}, false)
	if err != nil {
		t.Fatal(err)
	}
	if [4]float64(ds.X[:4]) != [4]float64{1, 31, 24, 1014} || ds.Y[0] != 0 || ds.Y[1] != 0 {
		t.Errorf("rows 5 and 1: %v labels %v", ds.X, ds.Y)
	}
	rs.Close()
	st1, err := os.Stat(cache)
	if err != nil {
		t.Fatal(err)
	}

	// Reopening uses the cache.
	rs, _, err = OpenAirline(dir, 5, 0.25)
	if err != nil {
		t.Fatal(err)
	}
	rs.Close()
	st2, _ := os.Stat(cache)
	if got := airlineBuilds.Load() - builds; got != 1 || !st2.ModTime().Equal(st1.ModTime()) {
		t.Errorf("reopen rebuilt the cache (%d builds, mtime %v → %v)", got, st1.ModTime(), st2.ModTime())
	}

	// Another split is another cache.
	rs, _, err = OpenAirline(dir, 6, 0.25)
	if err != nil {
		t.Fatal(err)
	}
	rs.Close()
	if got := airlineBuilds.Load() - builds; got != 2 {
		t.Errorf("a new seed gave %d builds in total, want 2", got)
	}

	// A cache with the wrong shape (here D = 3 from another parser) is rebuilt.
	if err := BuildRowStore(strings.NewReader("a,b,c,y\n1,2,3,0\n"), "other.csv", parseNumericRow, cache, nil); err != nil {
		t.Fatal(err)
	}
	rs, _, err = OpenAirline(dir, 5, 0.25)
	if err != nil {
		t.Fatal(err)
	}
	if rs.D() != 4 || rs.N() != 11 {
		t.Errorf("after a wrong-shape cache: N, D = %d, %d", rs.N(), rs.D())
	}
	rs.Close()
	if got := airlineBuilds.Load() - builds; got != 3 {
		t.Errorf("wrong-shape cache: %d builds in total, want 3", got)
	}

	// A truncated cache is rebuilt.
	if err := os.Truncate(cache, 50); err != nil {
		t.Fatal(err)
	}
	rs, _, err = OpenAirline(dir, 5, 0.25)
	if err != nil {
		t.Fatal(err)
	}
	rs.Close()
	if got := airlineBuilds.Load() - builds; got != 4 {
		t.Errorf("truncated cache: %d builds in total, want 4", got)
	}

	// A CSV newer than the cache makes it stale.
	writeBytes(t, csvPath, []byte(vegaSample+"01020900,1,280,BOS,LGA\n"))
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(csvPath, future, future); err != nil {
		t.Fatal(err)
	}
	rs, _, err = OpenAirline(dir, 5, 0.25)
	if err != nil {
		t.Fatal(err)
	}
	if rs.N() != 12 {
		t.Errorf("after the CSV changed: N = %d, want 12", rs.N())
	}
	rs.Close()
	if got := airlineBuilds.Load() - builds; got != 5 {
		t.Errorf("stale cache: %d builds in total, want 5", got)
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(csvPath), "*.tmp")); len(m) != 0 {
		t.Errorf("temporary files left behind: %v", m)
	}

	if _, _, err := OpenAirline(dir, 5, 1); err == nil {
		t.Error("testFrac 1 accepted")
	}
}

func TestOpenAirlineMissing(t *testing.T) {
	empty := t.TempDir()
	_, _, err := OpenAirline(empty, 1, 0.1)
	var md *MissingDataError
	if !errors.As(err, &md) || !strings.Contains(err.Error(), "gpc data fetch airline") || !strings.Contains(err.Error(), empty) {
		t.Errorf("missing airline data: %v", err)
	}
}

func TestOpenAirlineBadLine(t *testing.T) {
	dir, csvPath := airlineDataDir(t, vegaSample+"01021000,abc,300,BOS,LGA\n")
	_, _, err := OpenAirline(dir, 1, 0.1)
	if err == nil {
		t.Fatal("bad delay accepted")
	}
	want := "airline: " + csvPath + `:13:2: delay "abc" is not a number`
	if err.Error() != want {
		t.Errorf("error\n%s\nwant\n%s", err, want)
	}
	ents, _ := os.ReadDir(filepath.Dir(csvPath))
	if len(ents) != 1 {
		t.Errorf("files beside the CSV after a failed build: %v", ents)
	}
}

func TestOpenAirlineGzip(t *testing.T) {
	dir := t.TempDir()
	writeBytes(t, filepath.Join(dir, "airline", AirlineFile+".gz"), gzipBytes(t, []byte(vegaSample)))
	rs, _, err := OpenAirline(dir, 1, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	if rs.N() != 11 {
		t.Errorf("N = %d from the gzipped CSV, want 11", rs.N())
	}
}

// TestOpenAirlineReadOnlyDir checks that a CSV in a read-only directory
// (the shared data) gets its cache under ./data/airline instead.
func TestOpenAirlineReadOnlyDir(t *testing.T) {
	dir, csvPath := airlineDataDir(t, vegaSample)
	ro := filepath.Dir(csvPath)
	if err := os.Chmod(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(ro, 0o755) })
	wd := t.TempDir()
	t.Chdir(wd)
	builds := airlineBuilds.Load()
	for range 2 {
		rs, _, err := OpenAirline(dir, 2, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(wd, "data", "airline", "flights-3m.s2.t0.1.rows"); rs.Path() != want {
			t.Errorf("cache at %s, want %s", rs.Path(), want)
		}
		rs.Close()
	}
	if got := airlineBuilds.Load() - builds; got != 1 {
		t.Errorf("%d builds, want 1", got)
	}
	if ents, _ := os.ReadDir(ro); len(ents) != 1 {
		t.Errorf("the read-only directory was written to: %v", ents)
	}
}

// TestAirlineExtract exercises the tarball step of FetchAirline on a
// synthetic npm tarball, without the network.
func TestAirlineExtract(t *testing.T) {
	content := []byte(vegaSample)
	sum := md5.Sum(content)
	good := hex.EncodeToString(sum[:])
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, m := range []struct {
		name string
		body []byte
	}{
		{"package/package.json", []byte(`{"name":"vega-datasets"}`)},
		{"package/data/flights-2k.json", []byte("[]")},
		{airlineMember, content},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: m.name, Mode: 0o644, Size: int64(len(m.body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(m.body)
	}
	tw.Close()
	zw.Close()
	dir := t.TempDir()
	tgz := filepath.Join(dir, "vega-datasets-2.8.1.tgz")
	writeBytes(t, tgz, buf.Bytes())

	dst := filepath.Join(dir, "out", AirlineFile)
	os.MkdirAll(filepath.Dir(dst), 0o755)
	if err := extractNPMFile(tgz, airlineMember, dst, strings.Repeat("0", 32)); err == nil || !strings.Contains(err.Error(), "md5 mismatch") {
		t.Errorf("wrong md5: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(dst)); len(ents) != 0 {
		t.Errorf("files left after an md5 mismatch: %v", ents)
	}
	if err := extractNPMFile(tgz, "package/data/nope.csv", dst, good); err == nil || !strings.Contains(err.Error(), "has no package/data/nope.csv") {
		t.Errorf("absent member: %v", err)
	}
	if err := extractNPMFile(tgz, airlineMember, dst, good); err != nil {
		t.Fatal(err)
	}
	if err := verifyFileMD5(dst, good); err != nil {
		t.Error(err)
	}
	if err := verifyFileMD5(dst, AirlineMD5); err == nil {
		t.Error("the sample verified against the real file's md5")
	}
}

// threeClassSample is hand-made flights whose delays sit on and around
// the ±AirlineOnTime boundaries, with the class each should get.
const threeClassSample = `date,delay,distance,origin,destination
01010600,-10,300,AAA,BBB
01010610,-5.5,300,AAA,BBB
01010620,-5,300,AAA,BBB
01010630,-4,300,AAA,BBB
01010640,0,300,AAA,BBB
01010650,3,300,AAA,BBB
01010700,5,300,AAA,BBB
01010710,5.5,300,AAA,BBB
01010720,6,300,AAA,BBB
01010730,12,300,AAA,BBB
`

// The classes of threeClassSample's rows: early below −5, on time from −5
// to 5 with both boundaries included ("more than 5 minutes" early or
// late), delayed above 5; and the binary labels of the same rows.
var (
	threeClassWant = []int{0, 0, 1, 1, 1, 1, 1, 2, 2, 2}
	binaryWant     = []int{0, 0, 0, 0, 0, 1, 1, 1, 1, 1}
)

func TestAirlineThreeClassLabels(t *testing.T) {
	lines := strings.Split(strings.TrimSpace(threeClassSample), "\n")[1:]
	parse3 := AirlineThreeClass.Parser()
	for i, rec := range lines {
		fields := strings.Split(rec, ",")
		x3, y3, err := parse3(i+2, fields)
		if err != nil {
			t.Fatalf("%s: %v", rec, err)
		}
		x2, y2, err := ParseVegaFlight(i+2, fields)
		if err != nil {
			t.Fatalf("%s: %v", rec, err)
		}
		if y3 != threeClassWant[i] {
			t.Errorf("%s: three-class label %d, want %d", rec, y3, threeClassWant[i])
		}
		if y2 != binaryWant[i] {
			t.Errorf("%s: ParseVegaFlight label %d, want %d (delay > 0)", rec, y2, binaryWant[i])
		}
		if _, yb, _ := AirlineDelayed.Parser()(i+2, fields); yb != y2 {
			t.Errorf("%s: AirlineDelayed's parser gives %d, ParseVegaFlight %d", rec, yb, y2)
		}
		if [4]float64(x3) != [4]float64(x2) {
			t.Errorf("%s: the labelling changed the features: %v vs %v", rec, x3, x2)
		}
	}
	// The parser's errors are ParseVegaFlight's.
	if _, _, err := parse3(9, strings.Split("01010600,abc,300,AAA,BBB", ",")); err == nil || !strings.Contains(err.Error(), AirlineFile+`:9:2: delay "abc" is not a number`) {
		t.Errorf("bad delay: %v", err)
	}
	if AirlineDelayed.Classes() != 2 || AirlineThreeClass.Classes() != 3 || AirlineLabels(7).Classes() != 0 {
		t.Error("Classes")
	}
	if got := AirlineDelayed.String(); got != "delay > 0" {
		t.Errorf("the binary labelling reads %q; the airline results' notes say %q", got, "delay > 0")
	}
}

// The three-class store is a file of its own beside the binary one, built
// once, with the three-class labels; the binary store and its name are
// unchanged by it.
func TestOpenAirlineThreeClass(t *testing.T) {
	dir, csvPath := airlineDataDir(t, threeClassSample)
	builds := airlineBuilds.Load()
	read := func(rs *RowStore) []int {
		t.Helper()
		idx := make([]int, rs.N())
		for i := range idx {
			idx[i] = i
		}
		ds, err := rs.Sample(idx, false)
		if err != nil {
			t.Fatal(err)
		}
		return ds.Y
	}
	rs3, _, err := OpenAirlineLabels(dir, 5, 0.25, AirlineThreeClass)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(filepath.Dir(csvPath), "flights-3m.c3.s5.t0.25.rows"); rs3.Path() != want {
		t.Errorf("three-class cache at %s, want %s", rs3.Path(), want)
	}
	if rs3.C() != 3 || !slices.Equal(read(rs3), threeClassWant) {
		t.Errorf("three-class store: C = %d, labels %v; want 3, %v", rs3.C(), read(rs3), threeClassWant)
	}
	rs3.Close()
	rs2, _, err := OpenAirline(dir, 5, 0.25)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(filepath.Dir(csvPath), "flights-3m.s5.t0.25.rows"); rs2.Path() != want {
		t.Errorf("binary cache at %s, want %s", rs2.Path(), want)
	}
	if rs2.C() != 2 || !slices.Equal(read(rs2), binaryWant) {
		t.Errorf("binary store: C = %d, labels %v; want 2, %v", rs2.C(), read(rs2), binaryWant)
	}
	rs2.Close()
	if got := airlineBuilds.Load() - builds; got != 2 {
		t.Errorf("%d builds for two labellings, want 2", got)
	}
	// Each is reused, not rebuilt from the other's file.
	for _, l := range []AirlineLabels{AirlineThreeClass, AirlineDelayed} {
		rs, _, err := OpenAirlineLabels(dir, 5, 0.25, l)
		if err != nil {
			t.Fatal(err)
		}
		if rs.C() != l.Classes() {
			t.Errorf("%v: reopened store has C = %d", l, rs.C())
		}
		rs.Close()
	}
	if got := airlineBuilds.Load() - builds; got != 2 {
		t.Errorf("%d builds after reopening both, want still 2", got)
	}
	if _, _, err := OpenAirlineLabels(dir, 5, 0.25, AirlineLabels(7)); err == nil || !strings.Contains(err.Error(), "unknown labelling") {
		t.Errorf("unknown labelling: %v", err)
	}
}
