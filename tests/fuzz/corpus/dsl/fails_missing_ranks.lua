-- args:
-- expect-exit: 2
-- expect: the rank count is missing (give --ranks N or a topology file)
return schedule{}
