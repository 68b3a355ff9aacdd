import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fillTemplate, placeholders, rowValues, unknownPlaceholders } from './message-template.ts';

test('placeholders: distinct names in order, spaces and case ignored; other braces are text', () => {
  assert.deepEqual(placeholders('Hi {{first_name}}, {{ Table }} at {{time}}; bye {{FIRST_NAME}}'), ['first_name', 'table', 'time']);
  assert.deepEqual(placeholders('{single} {{}} {{two words}} {{ok-1}}'), ['ok-1']);
});

test('fillTemplate replaces each placeholder by its column, leaves values as written', () => {
  const row = rowValues(['to', ' First_Name ', 'amount'], ['+447911123456', 'Zoë', '{{amount}} $5']);
  assert.deepEqual(fillTemplate('Hi {{first_name}}, you owe {{ AMOUNT }}.', row), { text: 'Hi Zoë, you owe {{amount}} $5.', missing: [] });
  assert.deepEqual(fillTemplate('No placeholders.', row), { text: 'No placeholders.', missing: [] });
});

test('a column the row lacks is reported, and the placeholder kept', () => {
  const row = rowValues(['to', 'name'], ['+447911123456']);
  assert.deepEqual(fillTemplate('{{name}}/{{city}}', row), { text: '/{{city}}', missing: ['city'] });
  assert.deepEqual(unknownPlaceholders('{{name}} {{City}} {{zip}}', ['to', 'name', 'city']), ['zip']);
});

test('the first of two columns with the same name wins', () => {
  assert.equal(fillTemplate('{{a}}', rowValues(['a', 'A'], ['first', 'second'])).text, 'first');
});

test('a header written in words is named with underscores: `First Name` is {{first_name}}', () => {
  const row = rowValues(['Phone Number', ' First  Name '], ['07400 123401', 'Ann']);
  assert.equal(fillTemplate('Hi {{first_name}} / {{FIRST_NAME}}', row).text, 'Hi Ann / Ann');
  assert.deepEqual(unknownPlaceholders('{{first_name}} {{phone_number}} {{firstname}}', ['Phone Number', 'First Name']), ['firstname']);
});
