-- SQL for tests/bench/real_programs_bench.py, run as
-- `sqlite3 :memory: '.read real_programs.sql'`: build a table from a
-- recursive CTE, index it, aggregate, join and sort. Deterministic output.
CREATE TABLE items(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, price REAL);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000)
INSERT INTO items SELECT i, (i * 7919) % 97, printf('item-%05d', (i * 31) % 1001), (i * 13 % 1000) / 10.0 FROM n;
CREATE INDEX items_grp ON items(grp);
CREATE TABLE groups(grp INTEGER PRIMARY KEY, label TEXT);
INSERT INTO groups SELECT DISTINCT grp, 'group-' || grp FROM items;
SELECT count(*), sum(price), min(name), max(name) FROM items;
SELECT g.label, count(*), round(avg(i.price), 2) FROM items i JOIN groups g ON g.grp = i.grp
  GROUP BY g.grp ORDER BY count(*) DESC, g.grp LIMIT 5;
SELECT name, price FROM items WHERE grp BETWEEN 10 AND 20 ORDER BY price DESC, name LIMIT 3;
SELECT count(*) FROM items a JOIN items b ON a.grp = b.grp AND a.id < b.id WHERE a.price > b.price + 50;
