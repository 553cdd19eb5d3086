package mcp

import (
	"regexp"
	"strings"
)

// Method names as both sides judge them (shared layer): which are the
// specification's, which may answer with an InputRequiredResult, which
// are valid names for an extension's methods and notifications.

// methodNameRE matches a valid method name: 1 to 256 visible ASCII characters.
var methodNameRE = regexp.MustCompile(`^[!-~]{1,256}$`)

// specNotifications are the notifications the specification defines:
// Notify does not send them (ReportProgress and Log do, with their
// rules; the others are the SDK's own).
var specNotifications = map[string]bool{
	notificationCancelled: true, notificationProgress: true, notificationMessage: true,
	NotificationResourceUpdated: true, notificationResourceListChanged: true,
	NotificationToolListChanged: true, notificationPromptListChanged: true,
	NotificationSubscriptionsAck: true, notificationInitialized: true,
	notificationRootsListChanged: true, notificationElicitationComplete: true,
}

// specMethods are the requests a server answers in some revision of the
// specification (either era), initialize among them; the value says
// whether the method may answer with an InputRequiredResult. The
// server's method tables (dispatch.go, legacy_era.go) serve these and
// no other (TestSpecMethodsAreTheServersTables).
var specMethods = map[string]bool{
	MethodDiscover:              false,
	MethodToolsList:             false,
	MethodToolsCall:             true,
	methodPromptsList:           false,
	MethodPromptsGet:            true,
	MethodResourcesList:         false,
	methodResourceTemplatesList: false,
	MethodResourcesRead:         true,
	methodComplete:              false,
	methodSubscriptionsListen:   false,

	methodInitialize:  false,
	methodPing:        false,
	methodSetLevel:    false,
	methodSubscribe:   false,
	methodUnsubscribe: false,
}

// reservedMethod reports whether name is a method of some revision of
// the specification (either era), or in a reserved namespace.
func reservedMethod(name string) bool {
	if _, ok := specMethods[name]; ok {
		return true
	}
	return strings.HasPrefix(name, "notifications/") || strings.HasPrefix(name, "rpc.")
}

// isInputRequiredMethod reports whether method may answer with an
// InputRequiredResult (tools/call, prompts/get, resources/read; a
// server's carrier custom methods are its own, see MethodSpec.Carrier).
func isInputRequiredMethod(method string) bool { return specMethods[method] }
