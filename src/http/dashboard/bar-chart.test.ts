import { test } from 'node:test';
import assert from 'node:assert/strict';
import { barChart, niceCeiling } from './bar-chart.ts';

test('the axis ends on 1, 2 or 5 times a power of ten, at least 1', () => {
  assert.deepEqual([0, 1, 2, 3, 7, 10, 11, 49, 51, 120, 999].map(niceCeiling), [1, 1, 2, 5, 10, 10, 20, 50, 100, 200, 1000]);
});

test('a bar per value above 0, its height in proportion, its tooltip and labels escaped; the image named by its title and description', () => {
  const svg = barChart({
    id: 'c',
    title: 'Clicks <per> hour',
    description: '3 clicks',
    bars: [{ label: 'a&b', value: 2 }, { label: 'x', value: 0 }, { label: 'y', value: 1 }],
    unit: ['click', 'clicks'],
  }).text;
  assert.match(svg, /^<svg class="bar-chart"[^>]* role="img" aria-labelledby="c c-desc"/);
  assert.match(svg, /<title id="c">Clicks &lt;per&gt; hour<\/title><desc id="c-desc">3 clicks<\/desc>/);
  const bars = [...svg.matchAll(/<rect class="bar"[^>]*height="([\d.]+)" fill="[^"]+" data-value="(\d+)"><title>([^<]*)<\/title>/g)].map((m) => [Number(m[1]), m[2], m[3]]);
  assert.deepEqual(bars.map((b) => [b[1], b[2]]), [['2', 'a&amp;b: 2 clicks'], ['1', 'y: 1 click']]);
  assert.equal(bars[0]![0], 2 * (bars[1]![0] as number));
  assert.ok(!svg.includes('a&b'), 'nothing unescaped');
});
