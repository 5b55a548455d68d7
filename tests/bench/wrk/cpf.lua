-- A valid CPF from nine random digits (math.random: each script seeds it in init), for the wrk scripts that create
-- people; they load it with dofile from their own folder.
return function()
  local d = {}
  for i = 1, 9 do d[i] = math.random(0, 9) end
  for _, n in ipairs({ 10, 11 }) do
    local sum = 0
    for i = 1, n - 1 do sum = sum + d[i] * (n + 1 - i) end
    local r = (sum * 10) % 11
    if r == 10 then r = 0 end
    d[n] = r
  end
  return table.concat(d)
end
