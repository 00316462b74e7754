package report

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/logbench/logbench/internal/testenv"
)

func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	testenv.Missing(t, "chromium not found: install it (Debian: apt-get install -y chromium)")
	return ""
}

// screenshot renders the page in headless Chromium and returns the decoded PNG.
func screenshot(t *testing.T, page []byte, width, height int) image.Image {
	t.Helper()
	chromium := findChromium(t)
	dir := t.TempDir()
	pagePath := filepath.Join(dir, "report.html")
	shotPath := filepath.Join(dir, "report.png")
	if err := os.WriteFile(pagePath, page, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--disable-gpu", "--no-sandbox",
		"--hide-scrollbars", "--force-device-scale-factor=1",
		"--user-data-dir="+filepath.Join(dir, "profile"), // a profile per run: parallel runs do not lock each other out
		"--screenshot="+shotPath, fmt.Sprintf("--window-size=%d,%d", width, height),
		"file://"+pagePath)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	file, err := os.Open(shotPath)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v", err)
	}
	defer func() { _ = file.Close() }() // read only: closing loses nothing
	img, err := png.Decode(file)
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	return img
}

// TestChromiumDrawsTheCharts renders the full report in a real browser and checks that
// the charts came out: many colours on the page, and every destination's colour drawn.
func TestChromiumDrawsTheCharts(t *testing.T) {
	b := fullBenchmark()
	img := screenshot(t, renderPage(t, b), 1280, 2000)
	if got := img.Bounds().Size(); got != image.Pt(1280, 2000) {
		t.Errorf("screenshot is %v, want 1280x2000", got)
	}
	pixels := map[color.RGBA]int{}
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			pixels[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 255}]++
		}
	}
	// Text alone gives grey shades; lines and bars in a dozen colours with their
	// anti-aliased edges give hundreds.
	if len(pixels) < 200 {
		t.Errorf("the screenshot has %d distinct colours: the charts were not drawn", len(pixels))
	}
	for _, s := range seriesOf(b) {
		want := parseHexColor(t, s.Color)
		if pixels[want] < 50 {
			t.Errorf("destination %s: %d pixels of its colour %s in the screenshot, want its markers and bars",
				s.Name, pixels[want], s.Color)
		}
	}
}

func parseHexColor(t *testing.T, hex string) color.RGBA {
	t.Helper()
	var c color.RGBA
	c.A = 255
	if _, err := fmt.Sscanf(hex, "#%02x%02x%02x", &c.R, &c.G, &c.B); err != nil {
		t.Fatalf("colour %q: %v", hex, err)
	}
	return c
}
