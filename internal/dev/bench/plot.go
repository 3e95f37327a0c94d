package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"image/color"
	"os"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// A growth plot has two panels against the number of configs: memory, and the cost of a change.
var (
	memorySeries = []string{"RSS settled", "VmHWM at settle", "heap in use settled"}
	changeSeries = []string{"latency p99", "API requests per change (excl. list/watch)"}
)

// growthRow is one growth size: its number of configs and its checks by name.
type growthRow struct {
	configs int
	values  map[string]float64
}

// growthRows picks the growth results that ran, ordered by size. Params is a population when
// the results are this run's, and a JSON object when they were read back from a .jsonl file.
func growthRows(results []*result) ([]growthRow, error) {
	var rows []growthRow
	for _, r := range results {
		if !strings.HasPrefix(r.Scenario, scGrowth+"-") || r.Error != "" {
			continue
		}
		b, err := json.Marshal(r.Params)
		if err != nil {
			return nil, fmt.Errorf("read the population of %s: %w", r.Scenario, err)
		}
		var pop population
		if err := json.Unmarshal(b, &pop); err != nil {
			return nil, fmt.Errorf("read the population of %s: %w", r.Scenario, err)
		}
		row := growthRow{configs: pop.ConfigMaps + pop.Secrets, values: map[string]float64{}}
		for _, c := range r.Checks {
			row.values[c.Name] = c.Measured
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b growthRow) int { return a.configs - b.configs })
	return rows, nil
}

// readResults reads the results of earlier runs from .jsonl files.
func readResults(paths []string) ([]*result, error) {
	var out []*result
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("read results: %w", err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			r := &result{}
			if err := json.Unmarshal(sc.Bytes(), r); err != nil {
				f.Close()
				return nil, fmt.Errorf("read results %s: %w", path, err)
			}
			out = append(out, r)
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("read results %s: %w", path, err)
		}
	}
	return out, nil
}

// writeGrowthPlot draws the growth rows as a PNG at path.
func writeGrowthPlot(rows []growthRow, path string) error {
	if len(rows) == 0 {
		return fmt.Errorf("plot %s: no growth results", path)
	}
	left, err := growthPanel(rows, "memory", "MiB", memorySeries)
	if err != nil {
		return err
	}
	right, err := growthPanel(rows, "cost of one change", "ms (p99) / requests", changeSeries)
	if err != nil {
		return err
	}
	img := vgimg.New(vg.Points(900), vg.Points(360))
	dc := draw.New(img)
	canvases := plot.Align([][]*plot.Plot{{left, right}}, draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Points(20),
		PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}, dc)
	left.Draw(canvases[0][0])
	right.Draw(canvases[0][1])
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write plot: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	return f.Close()
}

// growthPanel draws one line with points per series against the number of configs.
func growthPanel(rows []growthRow, title, unit string, series []string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "configs (cluster-wide)"
	p.Y.Label.Text = unit
	p.Y.Min = 0
	p.Legend.Top, p.Legend.Left = true, true
	colors := []color.RGBA{{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, {R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}}
	for i, name := range series {
		xy := make(plotter.XYs, len(rows))
		for j, r := range rows {
			xy[j] = plotter.XY{X: float64(r.configs), Y: r.values[name]}
		}
		line, points, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", name, err)
		}
		line.Color, points.Color = colors[i%len(colors)], colors[i%len(colors)]
		p.Add(line, points)
		p.Legend.Add(name, line, points)
	}
	return p, nil
}
