module gantry.local/gantry

go 1.24
