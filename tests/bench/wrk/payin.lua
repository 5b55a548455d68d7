-- POST /api/sandbox/payins of 1.00 BRL for one subject (PERSON_ID): every call decides clearance on that subject.
local token = os.getenv("TOKEN")
local id = os.getenv("PERSON_ID")
local body = string.format('{"subject_id":"%s","value":"1.00","currency":"BRL"}', id)
request = function()
  return wrk.format("POST", "/api/sandbox/payins",
    { ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json" }, body)
end
