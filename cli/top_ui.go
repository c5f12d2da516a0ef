package cli

// The interactive `petrel top`: a tview (tcell) screen refreshed every interval.

import (
	"context"
	"strings"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
)

func runTopUI(parent context.Context, src *topSource, interval time.Duration, limit int) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	app := tview.NewApplication()
	header := tview.NewTextView().SetDynamicColors(true)
	brokers := tview.NewTable().SetFixed(1, 0)
	brokers.SetBorder(true).SetTitle(" brokers ")
	parts := tview.NewTable().SetFixed(1, 0)
	parts.SetBorder(true).SetTitle(" busiest partitions ")
	footer := tview.NewTextView().SetDynamicColors(true).SetText("[::d]q quit · refresh every " + interval.String())
	layout := tview.NewFlex().SetDirection(tview.FlexRow).
		AddItem(header, 2, 0, false).
		AddItem(brokers, 0, 1, false).
		AddItem(parts, 0, 1, false).
		AddItem(footer, 1, 0, false)
	app.SetInputCapture(func(ev *tcell.EventKey) *tcell.EventKey {
		if ev.Rune() == 'q' || ev.Key() == tcell.KeyEscape {
			app.Stop()
			return nil
		}
		return ev
	})
	fill := func(t *tview.Table, rows [][]string) {
		t.Clear()
		for r, row := range rows {
			for col, text := range row {
				cell := tview.NewTableCell(text).SetExpansion(1)
				if r == 0 {
					cell.SetTextColor(tcell.ColorBlack).SetBackgroundColor(tcell.ColorGreen).SetSelectable(false)
				}
				if col > 2 {
					cell.SetAlign(tview.AlignRight)
				}
				t.SetCell(r, col, cell)
			}
		}
	}
	go func() {
		defer app.Stop()
		prev, err := src.sample(ctx)
		if err != nil {
			app.QueueUpdateDraw(func() { header.SetText("[red]" + err.Error()) })
		}
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			cur, err := src.sample(ctx)
			if err != nil {
				app.QueueUpdateDraw(func() { header.SetText("[red]" + err.Error()) })
				continue
			}
			if prev == nil {
				prev = cur
				continue
			}
			v := buildTopView(prev, cur, limit)
			prev = cur
			app.QueueUpdateDraw(func() {
				text := "[::b]petrel top[::-]  " + v.summary
				if len(v.warnings) > 0 {
					text += "\n[yellow]" + strings.Join(v.warnings, "; ")
				}
				header.SetText(text)
				fill(brokers, v.brokers)
				fill(parts, v.partitions)
			})
		}
	}()
	err := app.SetRoot(layout, true).Run()
	cancel()
	return err
}
