package render

import _ "github.com/jemcheck/jemcheck/methods/all" // the registry's methods
