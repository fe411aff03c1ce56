-- CPU-bound Lua for tests/bench/real_programs_bench.py: table building, a
-- sort with a Lua comparator, string formatting and concatenation, closures
-- and recursive calls. `lua5.4 real_programs.lua N`; prints a checksum line.
-- Deterministic output; the work does not depend on Lua's hash seed.
local n = tonumber(arg[1]) or 3000

local t = {}
for i = 1, n do t[i] = (i * 7919) % 1009 end
table.sort(t, function(a, b) return a > b end)

local sum = 0
for i = 1, n do sum = sum + t[i] * (i % 7) end

local parts = {}
for i = 1, n // 4 do parts[#parts + 1] = string.format("%d:%x", i, t[i]) end
local text = table.concat(parts, ",")

local counts = {}
for word in text:gmatch("%x+") do counts[#word] = (counts[#word] or 0) + 1 end

local function fib(k) if k < 2 then return k end return fib(k - 1) + fib(k - 2) end

local acc = 0
local function adder(x) return function(y) return x + y end end
for i = 1, n do acc = adder(i)(acc) % 1000003 end

print(sum, #text, counts[3] or 0, fib(16), acc)
